// The one view path of an interaction: an approval or a question that a tool call waits on.
//
// - `interactionsOf` reads the interactions of a tool entry, `waitsForSomeone` says whether one of
//   them is pending (the transcript builds such an entry at once, the tool view opens it).
// - `interactionPanel` renders one interaction: while it is pending, its form with the decision
//   controls; once settled, the record of what was decided. It keeps what a person typed across
//   updates that do not change the interaction, disables the form while a decision is on its way,
//   and re-enables it with the reason when the kernel refuses the decision.
// - `sendDecision` is the only place that sends a decision to the kernel (through the session).
//
// What differs between approvals and questions (the fields of the form, the words of the
// record) lives in approval.ts and question.ts, which never talk to the session themselves.
import { h } from "../dom";
import type {
  ApprovalDecisionMsg,
  ApprovalView,
  Entry,
  QuestionAnswersMsg,
  QuestionDeclineMsg,
  QuestionView,
  ToolEntry,
} from "../protocol";
import type { RequestResult, Session } from "../session";
import { approvalForm, approvalRecord } from "./approval";
import { questionForm, questionRecord } from "./question";

export type Interaction = { kind: "approval"; view: ApprovalView } | { kind: "question"; view: QuestionView };
export type InteractionKind = Interaction["kind"];

/** What a person decided: the page message without its ids (the panel adds the interaction's). */
export type Decision =
  | Omit<ApprovalDecisionMsg, "request_id" | "approval_id">
  | Omit<QuestionAnswersMsg, "request_id" | "question_id">
  | Omit<QuestionDeclineMsg, "request_id" | "question_id">;

/** What a form gets from its panel. */
export interface FormContext {
  /** The tool whose call waits (for labels). */
  toolName: string;
  /** Send the decision. The form is made busy while it is on its way; a refusal makes it usable
   * again and shows why. Resolves to whether the kernel accepted it. */
  submit(decision: Decision): Promise<boolean>;
}

/** The pending form of one interaction. */
export interface DecisionForm {
  /** The form; the panel appends the refusal line to it. */
  el: HTMLElement;
  /** Disable (or enable again) every control of the form. */
  setBusy(busy: boolean): void;
}

interface KindView<V> {
  /** Whether `v` shows its form (else its record). */
  showsForm(v: V): boolean;
  form(ctx: FormContext, v: V): DecisionForm;
  record(v: V): HTMLElement;
  /** The start of the line shown when the kernel refuses a decision. */
  refused: string;
  /** Whether the panel already shows the call's arguments (the tool view then hides its own). */
  coversArguments(v: V): boolean;
}

const KINDS: { approval: KindView<ApprovalView>; question: KindView<QuestionView> } = {
  approval: {
    showsForm: (a) => a.status === "pending",
    form: approvalForm,
    record: approvalRecord,
    refused: "The decision was not accepted",
    coversArguments: (a) => a.status === "pending",
  },
  question: {
    showsForm: (q) => q.status === "pending" && q.questions.length > 0,
    form: questionForm,
    record: questionRecord,
    refused: "The answers were not accepted",
    coversArguments: () => true,
  },
};

/** The per-kind part of `i` (the one place where the kind and its view are paired). */
const kindView = (i: Interaction): KindView<Interaction["view"]> => KINDS[i.kind] as KindView<Interaction["view"]>;

/** The interactions of a tool entry (an approval first, then a question). */
export function interactionsOf(entry: ToolEntry): Interaction[] {
  const out: Interaction[] = [];
  if (entry.approval) out.push({ kind: "approval", view: entry.approval });
  if (entry.question) out.push({ kind: "question", view: entry.question });
  return out;
}

export const isPending = (i: Interaction): boolean => i.view.status === "pending";

/** An approval or a question waits for a person in this entry. */
export const waitsForSomeone = (entry: Entry): boolean =>
  entry.kind === "tool" && interactionsOf(entry).some(isPending);

/** The panel of the interactions of `entry` shows the call's arguments already. */
export const coversArguments = (entry: ToolEntry): boolean =>
  interactionsOf(entry).some((i) => kindView(i).coversArguments(i.view));

/** Send a person's decision on the interaction `id` to the kernel; its reply. */
export function sendDecision(session: Session, id: string, decision: Decision): Promise<RequestResult> {
  return session.request(
    decision.type === "approval_decision" ? { ...decision, approval_id: id } : { ...decision, question_id: id },
  );
}

export interface InteractionPanel {
  el: HTMLElement;
  readonly kind: InteractionKind;
  readonly id: string;
  /** Show the interaction's new state (same kind and id). */
  update(interaction: Interaction): void;
}

export function interactionPanel(session: Session, toolName: string, interaction: Interaction): InteractionPanel {
  const { kind, view } = interaction;
  const el = h("div", { class: `anvia-${kind}-slot` });
  // The view shown: the page store's own object (it replaces a view when it changes), no copy.
  let shown: Interaction["view"] | null = null;
  let stopForm = (): void => {};

  function update(next: Interaction): void {
    const status = next.view.status;
    // A pending form keeps what the person typed; a settled record is redrawn when it changes.
    if (shown && shown.status === status && (status === "pending" || shown === next.view)) return;
    shown = next.view;
    const k = kindView(next);
    stopForm();
    stopForm = () => {};
    if (k.showsForm(next.view)) {
      const form = pendingForm(session, toolName, next);
      stopForm = form.stop;
      el.replaceChildren(form.el);
    } else {
      el.replaceChildren(k.record(next.view));
    }
  }

  update(interaction);
  return { el, kind, id: view.id, update };
}

function pendingForm(
  session: Session,
  toolName: string,
  interaction: Interaction,
): { el: HTMLElement; stop: () => void } {
  const k = kindView(interaction);
  const error = h("div", {
    class: `anvia-error-text anvia-${interaction.kind}-error`,
    role: "alert",
    hidden: true,
  });
  const setError = (text: string): void => {
    error.textContent = text;
    error.hidden = !text;
    if (text) error.scrollIntoView?.({ block: "nearest" });
  };
  let sending = false;
  const ctx: FormContext = {
    toolName,
    async submit(decision) {
      if (sending) return false;
      sending = true;
      setError("");
      form.setBusy(true);
      const reply = await sendDecision(session, interaction.view.id, decision);
      if (!reply.ok) {
        sending = false;
        form.setBusy(false);
        setError(`${k.refused}: ${reply.error ?? "unknown error"}`);
      }
      return reply.ok;
    },
  };
  const form = k.form(ctx, interaction.view);
  const deadline = interaction.view.expires_at;
  const clock = deadline ? countdown(deadline, interaction.kind) : null;
  if (clock) form.el.append(clock.el);
  form.el.append(error);
  return { el: form.el, stop: () => clock?.stop() };
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
 * waiting (`show(timeout=...)`); it stops when the form is gone. Not a live region: a screen
 * reader would read every second.
 */
function countdown(expiresAt: string, kind: InteractionKind): { el: HTMLElement; stop: () => void } {
  const end = Date.parse(expiresAt);
  const el = h("div", { class: "anvia-countdown" });
  let timer: ReturnType<typeof setTimeout> | null = null;
  const stop = (): void => {
    if (timer !== null) clearTimeout(timer);
    timer = null;
  };
  if (Number.isNaN(end)) {
    el.hidden = true;
    return { el, stop };
  }
  const verb = kind === "approval" ? "decide" : "answer";
  let seen = false;
  const tick = (): void => {
    timer = null;
    if (el.isConnected) seen = true;
    else if (seen) return; // the view went away
    const left = (end - Date.now()) / 1000;
    if (left <= 0) {
      el.textContent = "Time is up.";
      el.classList.add("anvia-countdown-over");
      return;
    }
    el.textContent = `Time left to ${verb}: ${formatLeft(left)}`;
    // Next when the shown second changes.
    timer = setTimeout(tick, (left - Math.ceil(left) + 1) * 1000);
  };
  tick();
  return { el, stop };
}
