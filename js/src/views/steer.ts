// Steering from the page: while a run goes (running, or waiting for you), a message typed in the
// message box is sent into it (`steer`): the agent reads it after its current step, or before it
// would finish (and then goes on). The transcript view (`show()`) gets its own message box, shown
// while the run goes (and after, while it keeps a message typed but not sent); the Studio's box
// steers while a run goes (views/studio.ts). Stop, in the status bar, stops.
import { button, h, nextDomId } from "../dom";
import { Listeners } from "../listeners";
import type { Status } from "../protocol";
import type { Session, SessionEvent } from "../session";

/** Whether the shown run goes on (a message typed now steers it). */
export const runGoesOn = (status: Status): boolean => status.state === "running" || status.state === "waiting";

/** The message box's hint while a run goes. */
export const STEER_PLACEHOLDER = "Message the agent while it works (Enter to send)";

/** Under a message typed but not sent when the run ended: the box stays, its text kept. */
export const UNSENT_NOTE = "Not sent: the run ended first. Copy the text to keep it, or discard it.";

/** Messages sent from this page into a session's run that the agent has not read yet. One count
 * per session, not per view: a view the kernel draws again while a message waits still says so,
 * and each steered message the transcript shows is counted once, however many views there are. */
interface Waiting {
  count: number;
  views: Listeners<void>;
}
const waitingBySession = new WeakMap<Session, Waiting>();

function waitingOf(session: Session): Waiting {
  const known = waitingBySession.get(session);
  if (known !== undefined) return known;
  const waiting: Waiting = { count: 0, views: new Listeners<void>("message note") };
  session.subscribe((ev) => {
    if (ev.type === "add" && ev.entry.kind === "user" && ev.entry.steered && waiting.count > 0) waiting.count -= 1;
    else if ((ev.type === "status" && !runGoesOn(ev.status)) || ev.type === "reset") waiting.count = 0;
    else return;
    waiting.views.emit();
  });
  waitingBySession.set(session, waiting);
  return waiting;
}

/** Send `text` into the shown run; resolves to the refusal's text, or null when it was sent. */
export async function steer(session: Session, text: string): Promise<string | null> {
  const waiting = waitingOf(session);
  const reply = await session.request({ type: "steer", text });
  if (!reply.ok) return reply.error ?? "Request refused";
  waiting.count += 1;
  waiting.views.emit();
  return null;
}

export interface SentNote {
  el: HTMLElement;
  dispose(): void;
}

/** The line under a message box that says a message went into the run and waits there: the
 * agent reads it after its current step (which may wait for an approval or an answer), and the
 * transcript shows it only then. It goes once every message sent is shown, or the run ended (the
 * transcript then says which were not delivered). A polite live region. */
export function sentNote(session: Session): SentNote {
  const el = h("div", { class: "anvia-steer-note", role: "status", hidden: true });
  const waiting = waitingOf(session);
  const render = (): void => {
    const count = waiting.count;
    el.hidden = count === 0;
    el.textContent =
      count === 0
        ? ""
        : count === 1
          ? "Sent: the agent reads your message after its current step."
          : `${count} messages sent: the agent reads them after its current step.`;
  };
  render();
  return { el, dispose: waiting.views.subscribe(render) };
}

export interface SteerBox {
  el: HTMLElement;
  dispose(): void;
}

/** The transcript view's message box: visible while the run goes, and after it while it holds a
 * message typed but not sent (then read-only, to copy, with Discard): a chat box keeps a draft,
 * and this one has no run left to send it to. */
export function steerBox(session: Session): SteerBox {
  const unsentId = nextDomId("steer-unsent");
  const textarea = h("textarea", {
    class: "anvia-input anvia-prompt",
    placeholder: STEER_PLACEHOLDER,
    "aria-label": "Message the agent",
    rows: 1,
  });
  const send = button("Send", () => void submit(), { class: "anvia-button anvia-primary" });
  const discard = button("Discard", () => {
    const hadFocus = el.contains(document.activeElement);
    textarea.value = "";
    setError(null);
    render();
    // (the box goes: focus to the transcript above it, not lost to the page)
    if (hadFocus) el.closest(".anvia-root")?.querySelector<HTMLElement>(".anvia-transcript")?.focus({ preventScroll: true });
  }, { class: "anvia-button", hidden: true });
  const error = h("div", { class: "anvia-error-text", hidden: true });
  const unsent = h("div", { class: "anvia-steer-unsent", id: unsentId, hidden: true }, UNSENT_NOTE);
  const note = sentNote(session);
  const el = h(
    "div",
    { class: "anvia-composer anvia-steer", hidden: true },
    h("div", { class: "anvia-row" }, textarea, send, discard),
    error,
    unsent,
    note.el,
  );
  let sending = false;

  function setError(text: string | null): void {
    error.textContent = text ?? "";
    error.hidden = !text;
  }

  async function submit(): Promise<void> {
    const text = textarea.value;
    if (!text.trim() || sending || !runGoesOn(session.store.status)) return;
    sending = true;
    setError(null);
    textarea.value = "";
    render();
    const refused = await steer(session, text);
    sending = false;
    if (refused) {
      setError(refused);
      if (!textarea.value) textarea.value = text; // nothing typed meanwhile: the text comes back
    }
    render();
  }

  textarea.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter" || ev.shiftKey) return; // Shift+Enter: newline
    if (ev.isComposing || ev.keyCode === 229) return; // IME composing
    ev.preventDefault();
    void submit();
  });
  textarea.addEventListener("input", () => render());

  function render(): void {
    const goes = runGoesOn(session.store.status);
    const kept = !goes && !sending && textarea.value.trim() !== ""; // typed, not sent: kept
    el.hidden = !goes && !kept;
    send.hidden = kept;
    send.disabled = !goes || sending || !textarea.value.trim();
    discard.hidden = !kept;
    unsent.hidden = !kept;
    textarea.readOnly = kept;
    if (kept) textarea.setAttribute("aria-describedby", unsentId);
    else textarea.removeAttribute("aria-describedby");
  }

  const onEvent = (ev: SessionEvent): void => {
    if (ev.type === "status" || ev.type === "reset") render();
  };
  render();
  const unsubscribe = session.subscribe(onEvent);
  return {
    el,
    dispose: () => {
      unsubscribe();
      note.dispose();
    },
  };
}
