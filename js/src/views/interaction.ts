// The one view path of an interaction: an approval or a question that a tool call waits on.
//
// - `interactionsOf` reads the interactions of a tool entry, `waitsForSomeone` says whether one of
//   them is pending (the transcript builds such an entry at once, the tool view opens it).
// - `interactionPanel` renders one interaction: while it is pending, its form with the decision
//   controls; once settled, the record of what was decided. It keeps what a person typed across
//   updates that do not change the interaction, disables the form's controls while a decision is
//   on its way, and re-enables them with the reason when the kernel refuses the decision. It is the
//   only place that sends a decision to the kernel (through the session).
//
// What differs between approvals and questions (the fields of the form, the words of the
// record) lives in approval.ts and question.ts, which never talk to the session themselves.
import { append, h } from "../dom";
import type { ApprovalView, Entry, PageRequest, QuestionView, ToolEntry } from "../protocol";
import type { Session } from "../session";
import { approvalForm, approvalRecord } from "./approval";
import { questionForm, questionRecord } from "./question";

export type Interaction = { kind: "approval"; view: ApprovalView } | { kind: "question"; view: QuestionView };

/** How a form sends what a person decided: the page message without its request id (the session
 * adds it). The form's controls are disabled while it is on its way; a refusal enables them again
 * and shows why. */
export type Submit = (decision: Extract<PageRequest, { type: "approval_decision" | "question_answers" | "question_decline" }>) => void;

/** A pending interaction's form: its element, and how it sets again the state of the controls it
 * disables itself (as "Next" on the last question) once a refusal has enabled them all. */
export type Form = { el: HTMLElement; refresh?: () => void };

/** The controls of a form that a decision on its way disables: all but a fold's "Show more". */
const CONTROLS = "input, textarea, button:not(.anvia-fold-toggle)";

/** A line for an error, read out when it appears and hidden while empty. */
export function errorLine(className: string, id?: string): { el: HTMLElement; set(text: string): void } {
  const el = h("div", { class: `anvia-error-text ${className}`, id, role: "alert", hidden: true });
  const set = (text: string): void => {
    el.textContent = text;
    el.hidden = !text;
    if (text) el.scrollIntoView?.({ block: "nearest" });
  };
  return { el, set };
}

/** The interactions of a tool entry (an approval first, then a question). */
export function interactionsOf(entry: ToolEntry): Interaction[] {
  const out: Interaction[] = [];
  if (entry.approval) out.push({ kind: "approval", view: entry.approval });
  if (entry.question) out.push({ kind: "question", view: entry.question });
  return out;
}

/** An approval or a question waits for a person in this entry. */
export const waitsForSomeone = (entry: Entry): boolean =>
  entry.kind === "tool" && interactionsOf(entry).some((i) => i.view.status === "pending");

/** The panel of the interactions of `entry` shows the call's arguments already: a pending
 * approval shows them, and a question shows its questions instead. */
export const coversArguments = (entry: ToolEntry): boolean =>
  entry.approval?.status === "pending" || entry.question != null;

/** The panel of one interaction; `update` shows its new state (of the same kind; another id
 * draws it anew). */
export function interactionPanel(session: Session, toolName: string, interaction: Interaction) {
  const { kind } = interaction;
  const el = h("div", { class: `anvia-${kind}-slot` });
  // The view shown: the page store's own object (it replaces a view when it changes), no copy.
  let shown: Interaction["view"] | null = null;

  function update(next: Interaction): void {
    const { view } = next;
    // A pending form keeps what the person typed; a settled record is redrawn when it changes.
    const same = shown?.id === view.id && shown.status === view.status;
    if (same && (view.status === "pending" || shown === view)) return;
    shown = view;
    if (view.status !== "pending" || (next.kind === "question" && next.view.questions.length === 0)) {
      el.replaceChildren(next.kind === "approval" ? approvalRecord(next.view) : questionRecord(next.view));
      return;
    }
    const error = errorLine(`anvia-${kind}-error`);
    let sending = false;
    const setSending = (on: boolean): void => {
      sending = on;
      for (const c of form.el.querySelectorAll<HTMLInputElement | HTMLTextAreaElement | HTMLButtonElement>(CONTROLS)) c.disabled = on;
      if (!on) form.refresh?.();
    };
    const submit: Submit = async (decision) => {
      if (sending) return;
      setSending(true);
      error.set("");
      const reply = await session.request(decision);
      if (reply.ok) return;
      const refused = kind === "approval" ? "The decision was not accepted" : "The answers were not accepted";
      const why = `${refused}: ${reply.error ?? "unknown error"}`;
      if (shown !== view) {
        // Decided meanwhile (in another tab, from the terminal, by a handler): the record shows
        // how; under it, why this decision was not used.
        const late = errorLine(`anvia-${kind}-error`);
        late.set(why);
        el.append(late.el);
        return;
      }
      setSending(false);
      error.set(why);
    };
    // The countdown and the refusal line go at the end of the form.
    const form: Form = next.kind === "approval" ? approvalForm(next.view, toolName, submit) : questionForm(next.view, submit);
    // The countdown stops once this form is no longer the one shown.
    append(form.el, countdown(view.expires_at, kind, () => shown === view), error.el);
    el.replaceChildren(form.el);
  }

  update(interaction);
  return { el, kind, update };
}

/** m:ss (or h:mm:ss) of a number of whole seconds. */
export function formatLeft(seconds: number): string {
  const s = Math.max(0, Math.ceil(seconds));
  const pad = (n: number): string => String(n).padStart(2, "0");
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  return h > 0 ? `${h}:${pad(m)}:${pad(s % 60)}` : `${m}:${pad(s % 60)}`;
}

/**
 * "Time left to decide: 1:05", counting down each second to the time the kernel gives up
 * waiting (`show(timeout=...)`), while `live()` says its form is shown and until the view goes
 * away. Not a live region: a screen reader would read every second. No time limit, or one that
 * does not parse, shows nothing.
 */
function countdown(expiresAt: string | null | undefined, kind: Interaction["kind"], live: () => boolean): HTMLElement | null {
  const end = Date.parse(expiresAt ?? "");
  if (Number.isNaN(end)) return null;
  const el = h("div", { class: "anvia-countdown" });
  let seen = false;
  const tick = (): void => {
    if (!live() || (seen && !el.isConnected)) return;
    seen ||= el.isConnected;
    const left = (end - Date.now()) / 1000;
    const over = left <= 0;
    el.textContent = over ? "Time is up." : `Time left to ${kind === "approval" ? "decide" : "answer"}: ${formatLeft(left)}`;
    el.classList.toggle("anvia-countdown-over", over);
    // Next when the shown second changes.
    if (!over) setTimeout(tick, (left - Math.ceil(left) + 1) * 1000);
  };
  tick();
  return el;
}
