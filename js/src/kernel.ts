// Noticing that the kernel behind a widget stopped: restarted, shut down, or died (the server
// then starts a new one). The run lived in that process: nothing a view sends can reach it any
// more, so the view must say so at once and turn its buttons off.
//
// What an anywidget view can reach of the page's widget manager, each used when present:
// - the model's `comm_live_update` event: ipywidgets' managers set `comm_live` to false on every
//   model when the kernel restarts (JupyterLab, Notebook 7; only ever that after the model exists);
// - `model.widget_manager.kernel` (JupyterLab's and Notebook 7's manager): the kernel connection,
//   whose `statusChanged` says "restarting", "autorestarting" (it died and the server restarted
//   it), "dead" (shut down) or "starting" (a new process, e.g. a restart asked of the server), and
//   whose `disposed` fires when the notebook lets go of it;
// - `model.widget_manager.context.sessionContext.kernelChanged`: the notebook now has another
//   kernel, or none;
// - the kernel connection's `anyMessage`: every kernel process signs its messages with its own
//   session id. A restart asked of the server (its REST API, another tab) keeps the same
//   connection, and the new process's "starting" status is often lost before the server's
//   sockets reconnect: the status messages that follow, signed by another session, still say the
//   process changed;
// - the kernel connection's `requestKernelInfo()`: after such a restart nothing may reach the
//   page at all (the server asks the new process for its info once, and the statuses that causes
//   can be published before the server's subscription to them is back). So while a view's run is
//   live (running, or waiting for a person) the page asks the kernel who it is every few seconds:
//   the reply, and the statuses around it, are signed by the process that answers. One question
//   per kernel connection at a time, shared by all its views; none while the page is hidden, and
//   none for views whose runs have ended (a restart then changes nothing they show until used).

/** Kernel statuses that mean the process the model lived in is gone. */
export const STOPPED_STATUSES: ReadonlySet<string> = new Set(["restarting", "autorestarting", "dead", "starting"]);

type Slot = (sender: unknown, args: unknown) => void;

interface SignalLike {
  connect(slot: Slot, thisArg?: unknown): unknown;
  disconnect(slot: Slot, thisArg?: unknown): unknown;
}

export const isSignal = (v: unknown): v is SignalLike =>
  !!v &&
  typeof (v as SignalLike).connect === "function" &&
  typeof (v as SignalLike).disconnect === "function";

/** Read a property of something foreign without letting a throwing getter escape. */
export function read(owner: unknown, key: string): unknown {
  if (owner === null || owner === undefined || (typeof owner !== "object" && typeof owner !== "function")) {
    return undefined;
  }
  try {
    return (owner as Record<string, unknown>)[key];
  } catch {
    return undefined;
  }
}

export interface KernelWatchTarget {
  on(event: string, callback: () => void): void;
  off(event: string, callback?: () => void): void;
}

/**
 * The session id of a message the kernel process published (iopub, received): a status or a
 * comm message (a widget's update, such as the snapshot every view asks for when it starts),
 * else null. Other iopub messages do not count: the server signs the few messages it writes
 * itself (a rate-limit warning as a stream, "restarting" and "dead" statuses) with its own session.
 */
export function kernelStatusSigner(args: unknown): string | null {
  if (read(args, "direction") !== "recv") return null;
  const msg = read(args, "msg");
  if (read(msg, "channel") !== "iopub") return null;
  const header = read(msg, "header");
  const type = read(header, "msg_type");
  if (type === "status") {
    const state = read(read(msg, "content"), "execution_state");
    if (typeof state === "string" && STOPPED_STATUSES.has(state)) return null; // statusChanged says it
  } else if (type !== "comm_msg") {
    return null;
  }
  const session = read(header, "session");
  return typeof session === "string" && session ? session : null;
}

/** How often the page asks a kernel whose views have a live run which process it is (ms). */
export const PROBE_INTERVAL_MS = 3000;

/** How long a question about the kernel's identity may go unanswered before another is asked
 * (ms): a restart loses the question asked of the old process; a kernel busy with a cell answers
 * when the cell ends (a cell that blocks on a run keeps other shell messages until then). */
export const PROBE_TIMEOUT_MS = 15000;

interface Watcher {
  stop: () => void;
  live: () => boolean;
}

/** Which process is behind one kernel connection, as the messages it signs say; shared by every
 * view of every model on that connection. */
class KernelIdentity {
  private session: string | null = null;
  private readonly watchers = new Set<Watcher>();
  private timer: ReturnType<typeof setInterval> | null = null;
  private askedAt: number | null = null;
  private gone = false;
  private readonly slot: Slot = (_sender, args) => {
    const signer = kernelStatusSigner(args);
    if (signer !== null) this.saw(signer);
  };
  private readonly signal: SignalLike | null;

  constructor(
    private readonly kernel: object,
    private readonly onEmpty: (identity: KernelIdentity) => void,
  ) {
    const signal = read(kernel, "anyMessage");
    this.signal = isSignal(signal) ? signal : null;
    try {
      this.signal?.connect(this.slot);
    } catch {
      /* not a signal we can use */
    }
  }

  /** Watch until the returned function is called; `stop` is called once if the process changes. */
  add(watcher: Watcher): () => void {
    this.watchers.add(watcher);
    // Who the kernel is comes with the snapshot the new view asks for (a comm message it signs),
    // or with the first answer below.
    if (this.timer === null && typeof read(this.kernel, "requestKernelInfo") === "function") {
      this.timer = setInterval(() => this.ask(), PROBE_INTERVAL_MS);
    }
    return () => {
      if (this.watchers.delete(watcher) && this.watchers.size === 0) this.close();
    };
  }

  /** A message signed by the kernel process `signer`. */
  private saw(signer: string): void {
    if (this.session === null) this.session = signer;
    else if (signer !== this.session) this.stopped();
  }

  /** The process changed: every view watching now lived in the old one. Views made later (a
   * cell run again on the same connection) are of the new process: they start a new identity. */
  private stopped(): void {
    if (this.gone) return;
    this.gone = true;
    const watchers = [...this.watchers];
    this.watchers.clear();
    this.close();
    for (const watcher of watchers) {
      try {
        watcher.stop();
      } catch (err) {
        console.error("anvia: could not mark a view's kernel as stopped", err);
      }
    }
  }

  /** Ask the kernel for its info (its reply is signed by the process that answers). */
  private ask(): void {
    if (this.gone) return;
    const now = Date.now();
    if (this.askedAt !== null && now - this.askedAt < PROBE_TIMEOUT_MS) return;
    if (typeof document !== "undefined" && document.hidden) return;
    if (![...this.watchers].some((w) => safeLive(w))) return;
    const request = read(this.kernel, "requestKernelInfo");
    if (typeof request !== "function") return;
    this.askedAt = now;
    const done = (): void => {
      if (this.askedAt === now) this.askedAt = null;
    };
    try {
      Promise.resolve((request as () => unknown).call(this.kernel)).then((reply) => {
        done();
        const session = read(read(reply, "header"), "session");
        if (typeof session === "string" && session) this.saw(session);
      }, done);
    } catch {
      done();
    }
  }

  private clearTimer(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
  }

  private close(): void {
    this.clearTimer();
    try {
      this.signal?.disconnect(this.slot);
    } catch {
      /* already gone */
    }
    this.onEmpty(this);
  }
}

const safeLive = (watcher: Watcher): boolean => {
  try {
    return watcher.live();
  } catch {
    return false;
  }
};

const identities = new WeakMap<object, KernelIdentity>();

function identityOf(kernel: object): KernelIdentity {
  let identity = identities.get(kernel);
  if (identity === undefined) {
    identity = new KernelIdentity(kernel, (closed) => {
      if (identities.get(kernel) === closed) identities.delete(kernel);
    });
    identities.set(kernel, identity);
  }
  return identity;
}

/**
 * Call `onStop` once, when the kernel of `model` stops. Returns a function that stops watching.
 * `isLive` says whether the view's run is live (running or waiting for a person): only then does
 * the page keep asking the kernel which process it is. A model from a page without any of the
 * above (a test double, another front end) is watched through whatever it has; nothing fails
 * when it has nothing.
 */
export function watchKernel(model: KernelWatchTarget, onStop: () => void, isLive: () => boolean = () => false): () => void {
  const undo: Array<() => void> = [];
  let stopped = false;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    onStop();
  };
  const listen = (signal: unknown, slot: Slot): void => {
    if (!isSignal(signal)) return;
    try {
      signal.connect(slot);
      undo.push(() => {
        try {
          signal.disconnect(slot);
        } catch {
          /* already gone */
        }
      });
    } catch {
      /* not a signal we can use */
    }
  };

  const onCommLive = (): void => stop();
  try {
    model.on("comm_live_update", onCommLive);
    undo.push(() => model.off("comm_live_update", onCommLive));
  } catch {
    /* a model without events */
  }

  const manager = read(model, "widget_manager");
  const kernel = read(manager, "kernel");
  if (kernel) {
    listen(read(kernel, "statusChanged"), (_sender, status) => {
      if (typeof status === "string" && STOPPED_STATUSES.has(status)) stop();
    });
    listen(read(kernel, "disposed"), () => stop());
    if (typeof kernel === "object") undo.push(identityOf(kernel).add({ stop, live: isLive }));
    const sessionContext = read(read(manager, "context"), "sessionContext");
    listen(read(sessionContext, "kernelChanged"), (_sender, change) => {
      if (read(change, "newValue") !== kernel) stop();
    });
  }

  return () => {
    for (const fn of undo.splice(0)) fn();
  };
}
