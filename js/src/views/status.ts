// The status line (state, turn, tokens, Stop), the "Kernel disconnected" / "Kernel stopped"
// banner, and the visually hidden polite live region that announces only run-level changes.
import { button, h } from "../dom";
import type { RunState, Status } from "../protocol";
import type { Session, SessionEvent } from "../session";
import { formatMs } from "./inspect";

export const STATE_LABELS: Record<RunState, string> = {
  idle: "Ready",
  running: "Running",
  waiting: "Waiting for you",
  success: "Done",
  error: "Error",
  cancelled: "Cancelled",
};

/** The only things the live region ever says. */
export const ANNOUNCEMENTS: Partial<Record<RunState, string>> = {
  running: "Agent started",
  waiting: "Waiting for you",
  success: "Finished",
  cancelled: "Stopped",
  error: "Failed",
};

/** The most characters of a run's error the status line shows (the whole error is the
 * transcript's error entry, above it). */
export const STATUS_ERROR_CHARS = 200;

/** A run's error as the status line says it: its first line, cut to `STATUS_ERROR_CHARS` ("…"
 * where something was left out). A provider's error can hold a whole HTML page: in full, the
 * status line grew to thousands of pixels under the transcript. */
export function errorSummary(error: string): string {
  const text = error.trim();
  const line = text.split("\n", 1)[0]!.trim();
  let end = Math.min(line.length, STATUS_ERROR_CHARS);
  if (end < line.length && /[\ud800-\udbff]/.test(line.charAt(end - 1))) end--; // (no half of a pair)
  const shown = line.slice(0, end);
  return shown.length < text.length ? `${shown}…` : shown;
}

const stoppable = (s: Status): boolean => s.state === "running" || s.state === "waiting";

/** How a person continues a run from a new kernel (API: `agent.resume(run_id)`). */
export const resumeCode = (runId: string): string => `agent.resume(${JSON.stringify(runId)}).show()`;

/** Whether a stopped kernel is news for this view: it showed something live (a run not finished,
 * or a Studio). A finished run's view had nothing live left: it stays as it was. */
export const kernelStopMatters = (session: Session): boolean =>
  session.kernelStopped &&
  (session.mode === "studio" || session.store.seq === null || stoppable(session.store.status));

/** The banner's content once the kernel stopped: what happened, and how to continue the run. */
export function kernelStoppedNotice(session: Session): HTMLElement[] {
  const s = session.store.status;
  const parts: HTMLElement[] = [
    h("strong", {}, "Kernel stopped."),
    h(
      "span",
      {},
      " The kernel this view was connected to restarted, was shut down or crashed: the view is no longer live and its buttons are turned off.",
    ),
  ];
  const unfinished = session.store.seq === null || stoppable(s);
  if (s.run_id && unfinished) {
    parts.push(
      h(
        "div",
        { class: "anvia-resume" },
        "The run was saved and can continue in the new kernel: set up the agent again, then run ",
        h("code", {}, resumeCode(s.run_id)),
        " in a cell.",
      ),
    );
  } else if (session.mode === "studio") {
    parts.push(h("div", { class: "anvia-resume" }, "Run this cell again to start a new Studio."));
  }
  return parts;
}

export interface StatusView {
  /** The status bar (with Stop). */
  el: HTMLElement;
  /** The disconnected banner, placed at the top of the root. */
  banner: HTMLElement;
  /** The live region, placed anywhere in the root. */
  live: HTMLElement;
  dispose(): void;
}

/** Ask the kernel to stop (the run, the evaluation): `setStopping(true)` until the reply; a
 * refusal shows in `error` with the kernel's reason (or `failed`) and sets it back to false. */
export async function requestStop(
  session: Session,
  error: HTMLElement,
  failed: string,
  setStopping: (on: boolean) => void,
): Promise<void> {
  error.hidden = true;
  setStopping(true);
  const reply = await session.request({ type: "stop", reason: null });
  if (reply.ok) return;
  error.textContent = reply.error ?? failed;
  error.hidden = false;
  setStopping(false);
}

export function statusView(session: Session): StatusView {
  const dot = h("span", { class: "anvia-status-dot", "aria-hidden": "true" });
  const label = h("span", { class: "anvia-status-label" });
  const meta = h("span", { class: "anvia-status-meta" });
  const error = h("span", { class: "anvia-error-text", hidden: true });
  const stop = button("Stop", () => void requestStop(session, error, "Could not stop the run", (on) => {
    stopping = on;
    render();
  }), { class: "anvia-button anvia-stop" });
  const el = h("div", { class: "anvia-statusbar" }, dot, label, meta, error, stop);
  const banner = h("div", { class: "anvia-disconnected", hidden: true }, "Kernel disconnected");
  const live = h("div", { class: "anvia-visually-hidden", "aria-live": "polite", "aria-atomic": "true" });

  let stopping = false;
  let bannerShows: "none" | "disconnected" | "stopped" = "none";
  // Announce only changes seen after the view knows the state (not the first snapshot).
  let knownState: RunState | null = session.store.seq === null ? null : session.store.status.state;

  function render(): void {
    const s = session.store.status;
    el.className = `anvia-statusbar anvia-state-${s.state}`;
    label.textContent = kernelStopMatters(session)
      ? "Kernel stopped"
      : session.store.seq === null
        ? "Connecting…"
        : STATE_LABELS[s.state];
    const parts: string[] = [];
    if (s.state === "error" && s.error) parts.push(errorSummary(s.error));
    if (s.turn > 0) parts.push(`Turn ${s.turn}`);
    if (s.input_tokens > 0 || s.output_tokens > 0) {
      parts.push(`${s.input_tokens.toLocaleString()} in / ${s.output_tokens.toLocaleString()} out tokens`);
    } else if (typeof s.duration_ms === "number") {
      parts.push("no token counts"); // the run ended and its model reported none (an offline one)
    }
    // The run summary, once the run has ended.
    if (typeof s.first_token_ms === "number") parts.push(`first token after ${formatMs(s.first_token_ms)}`);
    if (typeof s.duration_ms === "number") parts.push(`${formatMs(s.duration_ms)} in all`);
    meta.textContent = parts.join(" · ");
    stop.disabled = stopping || !stoppable(s) || session.kernelStopped;
    const shows = kernelStopMatters(session) ? "stopped" : session.disconnected ? "disconnected" : "none";
    if (shows !== bannerShows) {
      bannerShows = shows;
      if (shows === "stopped") banner.replaceChildren(...kernelStoppedNotice(session));
      else banner.textContent = "Kernel disconnected";
      banner.classList.toggle("anvia-kernel-stopped-notice", shows === "stopped");
    }
    banner.hidden = shows === "none";
  }

  function onEvent(ev: SessionEvent): void {
    if (ev.type === "status") {
      const state = ev.status.state;
      if (knownState !== null && state !== knownState) {
        const say = ANNOUNCEMENTS[state];
        // The same words twice in a row: a trailing no-break space makes screen readers repeat them.
        if (say) live.textContent = live.textContent === say ? `${say}\u00a0` : say;
      }
      if (state !== knownState) stopping = false;
      knownState = state;
      render();
    } else if (ev.type === "connection") {
      if (kernelStopMatters(session) && bannerShows !== "stopped") {
        live.textContent = live.textContent === "Kernel stopped" ? "Kernel stopped\u00a0" : "Kernel stopped";
      }
      render();
    }
  }

  render();
  const unsubscribe = session.subscribe(onEvent);
  return { el, banner, live, dispose: unsubscribe };
}
