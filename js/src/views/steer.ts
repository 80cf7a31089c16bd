// Steering from the page: while a run goes (running, or waiting for you), a message typed in the
// message box is sent into it (`steer`): the agent reads it after its current step, or before it
// would finish (and then goes on). The transcript view (`show()`) gets its own message box, shown
// only while the run goes; the Studio's box steers while a run goes (views/studio.ts). Stop, in
// the status bar, stops.
import { button, h } from "../dom";
import type { Status } from "../protocol";
import type { Session, SessionEvent } from "../session";

/** Whether the shown run goes on (a message typed now steers it). */
export const runGoesOn = (status: Status): boolean => status.state === "running" || status.state === "waiting";

/** The message box's hint while a run goes. */
export const STEER_PLACEHOLDER = "Message the agent while it works (Enter to send)";

/** Send `text` into the shown run; resolves to the refusal's text, or null when it was sent. */
export async function steer(session: Session, text: string): Promise<string | null> {
  const reply = await session.request({ type: "steer", text });
  return reply.ok ? null : (reply.error ?? "Request refused");
}

export interface SteerBox {
  el: HTMLElement;
  dispose(): void;
}

/** The transcript view's message box: visible while the run goes. */
export function steerBox(session: Session): SteerBox {
  const textarea = h("textarea", {
    class: "anvia-input anvia-prompt",
    placeholder: STEER_PLACEHOLDER,
    "aria-label": "Message the agent",
    rows: 1,
  });
  const send = button("Send", () => void submit(), { class: "anvia-button anvia-primary" });
  const error = h("div", { class: "anvia-error-text", hidden: true });
  const el = h("div", { class: "anvia-composer anvia-steer", hidden: true }, h("div", { class: "anvia-row" }, textarea, send), error);
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
    el.hidden = !goes;
    send.disabled = !goes || sending || !textarea.value.trim();
  }

  const onEvent = (ev: SessionEvent): void => {
    if (ev.type === "status" || ev.type === "reset") render();
  };
  render();
  const unsubscribe = session.subscribe(onEvent);
  return { el, dispose: unsubscribe };
}
