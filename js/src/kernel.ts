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
//   process changed.

/** Kernel statuses that mean the process the model lived in is gone. */
export const STOPPED_STATUSES: ReadonlySet<string> = new Set(["restarting", "autorestarting", "dead", "starting"]);

type Slot = (sender: unknown, args: unknown) => void;

interface SignalLike {
  connect(slot: Slot, thisArg?: unknown): unknown;
  disconnect(slot: Slot, thisArg?: unknown): unknown;
}

const isSignal = (v: unknown): v is SignalLike =>
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
 * The session id of a status message the kernel published (iopub, received), else null. Only
 * status messages count: the server signs the few messages it writes itself (a rate-limit
 * warning, "restarting", "dead") with its own session.
 */
export function kernelStatusSigner(args: unknown): string | null {
  if (read(args, "direction") !== "recv") return null;
  const msg = read(args, "msg");
  if (read(msg, "channel") !== "iopub") return null;
  const header = read(msg, "header");
  if (read(header, "msg_type") !== "status") return null;
  const state = read(read(msg, "content"), "execution_state");
  if (typeof state === "string" && STOPPED_STATUSES.has(state)) return null; // statusChanged says it
  const session = read(header, "session");
  return typeof session === "string" && session ? session : null;
}

/**
 * Call `onStop` once, when the kernel of `model` stops. Returns a function that stops watching.
 * A model from a page without any of the above (a test double, another front end) is watched
 * through whatever it has; nothing fails when it has nothing.
 */
export function watchKernel(model: KernelWatchTarget, onStop: () => void): () => void {
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
    let session: string | null = null;
    listen(read(kernel, "anyMessage"), (_sender, args) => {
      const signer = kernelStatusSigner(args);
      if (signer === null) return;
      if (session === null) session = signer;
      else if (signer !== session) stop();
    });
    const sessionContext = read(read(manager, "context"), "sessionContext");
    listen(read(sessionContext, "kernelChanged"), (_sender, change) => {
      if (read(change, "newValue") !== kernel) stop();
    });
  }

  return () => {
    for (const fn of undo.splice(0)) fn();
  };
}
