// The Studio (notebook Playground) controls: agent picker, "Earlier sessions" picker and "New
// session" above the transcript, quick prompts while the transcript is empty, and the prompt box
// with "Send" below it. Each agent has its own conversation: picking one asks the kernel to show
// it (`studio_select`), picking the first one again shows the earlier one.
import { ancestors, button, formatTime, h, nothingFocused } from "../dom";
import { schedule } from "../frame";
import type { Session, SessionEvent } from "../session";
import { runGoesOn, STEER_PLACEHOLDER, sentNote, steer } from "./steer";

/** Marks a control whose focus its own view carries over a redraw (the Studio's controls below);
 * other controls taken out with the view hand the focus to the new view's transcript
 * (views/root.ts). */
export const CARRIES_FOCUS = "data-anvia-carries-focus";

/** The Studio's controls that keep focus across redraws of the view, by name. */
type FocusKey = "prompt" | "agent" | "sessions" | "open" | "new-session";

/** Which control of a session's Studio has focus, and where it sat in the page (its ancestors,
 * nearest first). The kernel redraws the Studio's output after a run, an agent change or a new
 * session: the view a person was using is replaced by a new one, which takes the focus over. */
interface Carried {
  key: FocusKey | null;
  place: Element[];
}
const carriedBySession = new WeakMap<Session, Carried>();
/** The controls of each live Studio view of a session (a redrawn view may come before the old
 * one leaves: the old one hands its focus over as it goes). */
const viewsBySession = new WeakMap<Session, Set<Record<FocusKey, HTMLElement>>>();

/** The text Enter was pressed on that waits to be sent (see `sendQueued`), kept by the session:
 * the kernel may redraw the Studio meanwhile (as a run ends), and the new view sends it. */
const queuedBySession = new WeakMap<Session, { text: string | null }>();

/** The nearest of `place` still in the page: where a view taken out was redrawn. */
const homeOf = (place: Element[]): Element | undefined => place.find((e) => e.isConnected);

/** Focus `el` if it is where the focused control was (its output, not another view's). */
function takeFocus(el: HTMLElement, carried: Carried, key: FocusKey, draft: Session["draft"]): boolean {
  if (carried.key !== key || !el.isConnected || !nothingFocused() || el.matches(":disabled, [hidden] *")) return false;
  const home = homeOf(carried.place);
  if (home && !home.contains(el)) return false;
  el.focus();
  if (el instanceof HTMLTextAreaElement) el.setSelectionRange(draft.start, draft.end);
  return document.activeElement === el;
}

export interface StudioControls {
  header: HTMLElement;
  prompts: HTMLElement;
  composer: HTMLElement;
  dispose(): void;
}

export function studioControls(session: Session): StudioControls {
  const select = h("select", { class: "anvia-select", "aria-label": "Agent" });
  const newSession = button("New session", () => void run({ type: "studio_new_session" }));
  // Earlier stored sessions (shown when there are some): pick one, then "Open" (or Enter).
  const sessionSelect = h("select", { class: "anvia-select anvia-session-select", "aria-label": "Earlier sessions" });
  const openSession = button("Open", () => void openChosen());
  const sessions = h(
    "div",
    { class: "anvia-sessions", role: "group", "aria-label": "Earlier sessions", hidden: true },
    h("label", { class: "anvia-field" }, "Earlier sessions ", sessionSelect),
    openSession,
  );
  const header = h(
    "div",
    { class: "anvia-studio-header" },
    h("label", { class: "anvia-field" }, "Agent ", select),
    sessions,
    newSession,
  );
  const prompts = h("div", { class: "anvia-quick-prompts", role: "group", "aria-label": "Quick prompts", hidden: true });
  const textarea = h("textarea", {
    class: "anvia-input anvia-prompt",
    placeholder: "Message the agent",
    "aria-label": "Message the agent",
    rows: 2,
  });
  const send = button("Send", () => void submit(), { class: "anvia-button anvia-primary" });
  const error = h("div", { class: "anvia-error-text", hidden: true });
  const note = sentNote(session);
  const composer = h("div", { class: "anvia-composer" }, h("div", { class: "anvia-row" }, textarea, send), error, note.el);

  /** The agent the user picked here while the kernel is asked to show its conversation; else
   * the kernel's selection counts. */
  let chosen: string | null = null;
  let sending = false;
  /** An agent change is on its way to the kernel: the picker stays on (it keeps the focus of a
   * person using the keyboard), its changes meanwhile undone; the rest waits. */
  let picking = false;

  const agentId = (): string | null => {
    const st = session.studio;
    if (!st) return null;
    if (chosen && st.agents.some((a) => a.id === chosen)) return chosen;
    return st.selected || st.agents[0]?.id || null;
  };
  const kernelBusy = (): boolean => {
    const state = session.store.status.state;
    return !!session.studio?.busy || state === "running" || state === "waiting";
  };
  const busy = (): boolean => sending || picking || kernelBusy();

  function setError(text: string | null): void {
    error.textContent = text ?? "";
    error.hidden = !text;
  }

  async function run(req: Parameters<Session["request"]>[0]): Promise<boolean> {
    setError(null);
    const reply = await session.request(req);
    if (!reply.ok) setError(reply.error ?? "Request refused");
    return reply.ok;
  }

  /** While a run goes, the box's message is sent into it (`steer`) instead of starting a run. */
  const steering = (): boolean => !sending && runGoesOn(session.store.status);

  async function steerText(text: string): Promise<void> {
    sending = messageInFlight = true;
    setError(null);
    emptyBoxes();
    render();
    const refused = await steer(session, text);
    sending = messageInFlight = false;
    if (refused) {
      queue.text = null;
      setError(refused);
      if (!textarea.value) {
        textarea.value = text;
        keepDraft();
      }
    }
    render();
    sendQueued();
  }

  /** Enter was pressed before the kernel said which agents there are (the Studio was just
   * drawn): the box's text goes as soon as it has. */
  let sendWhenKnown = false;
  /** A message (a prompt or a steer) is on its way to the kernel. */
  let messageInFlight = false;
  /** The text Enter was pressed on while the previous message was still on its way, or while
   * the kernel took in the end of a run: it goes once the kernel has answered that one and said
   * whether a run goes on (then it is steered into it), unless the box holds something else by
   * then (the person's to send). */
  const queue = queuedBySession.get(session) ?? { text: null };
  queuedBySession.set(session, queue);

  function sendQueued(): void {
    if (queue.text === null || sending) return;
    if (!steering() && busy()) return; // (the run's status is not here yet)
    // (a view of the session in the page sends it: one being taken out may hear of it first)
    if (!textarea.isConnected && [...views].some((view) => view.prompt.isConnected)) return;
    const text = queue.text;
    queue.text = null;
    if (draft.text === text) void sendText(text, true); // (else the box holds another's)
  }

  /** The box's text has left: every view's box of the session is emptied (a view the kernel
   * redrew, or the Studio shown twice, would otherwise hold it, to be sent again). */
  function emptyBoxes(): void {
    for (const view of views) (view.prompt as HTMLTextAreaElement).value = "";
    textarea.value = "";
    keepDraft();
  }

  async function sendText(text: string, fromBox: boolean): Promise<void> {
    if (fromBox && !session.studio && text.trim()) {
      sendWhenKnown = true;
      return;
    }
    if (fromBox && text.trim() && steering()) return steerText(text);
    if (fromBox && text.trim() && messageInFlight) {
      queue.text = text;
      return;
    }
    if (fromBox && text.trim() && !sending && !picking && kernelBusy()) {
      // The run has ended (no run to steer) but the kernel is still taking its end in (the
      // status comes before the Studio's word): the message goes once it has, as a new prompt.
      queue.text = text;
      return;
    }
    const agent = agentId();
    if (!text.trim() || busy()) return;
    if (!agent) {
      setError("No agent to send to");
      return;
    }
    sending = messageInFlight = true;
    if (fromBox) {
      emptyBoxes();
    } else {
      toPromptBox(prompts);
    }
    render();
    const ok = await run({ type: "studio_send", agent_id: agent, text });
    sending = messageInFlight = false;
    if (!ok) queue.text = null; // (what was typed next stays in the box)
    if (!ok && fromBox && !textarea.value) {
      textarea.value = text;
      keepDraft();
    }
    render();
    sendQueued();
  }
  const submit = (): Promise<void> => sendText(textarea.value, true);

  async function openChosen(): Promise<void> {
    const id = sessionSelect.value;
    if (!id || busy()) return;
    sending = true;
    toPromptBox(sessions);
    render();
    const ok = await run({ type: "studio_open_session", session_id: id });
    sending = false;
    if (ok) chosen = null; // the opened session's agent, as the kernel selected it
    render();
  }
  sessionSelect.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter") return;
    ev.preventDefault();
    void openChosen();
  });

  textarea.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter" || ev.shiftKey) return; // Shift+Enter: newline
    if (ev.isComposing || ev.keyCode === 229) return; // IME composing
    ev.preventDefault();
    void submit();
  });
  // The prompt box's text, caret and focus live in the session: the kernel redraws the Studio's
  // output after each run (to refresh its static copy), and typing must survive that.
  const draft = session.draft;
  const keepDraft = (): void => {
    draft.text = textarea.value;
    draft.start = textarea.selectionStart ?? draft.text.length;
    draft.end = textarea.selectionEnd ?? draft.start;
  };
  textarea.value = draft.text;
  textarea.addEventListener("input", () => {
    keepDraft();
    render();
  });
  textarea.addEventListener("select", keepDraft);
  textarea.addEventListener("keyup", keepDraft);

  // Focus lives in the session too. A view taken out of the page loses its focus, and Chromium
  // says so with a blur while the control is still in the page: whether the blur counts (the
  // person went elsewhere) is known once the page has settled. A control taken out, or moved,
  // with nothing focused since, was redrawn: its new view takes the focus over.
  const carried = carriedBySession.get(session) ?? { key: null, place: [] };
  carriedBySession.set(session, carried);
  const controls: Record<FocusKey, HTMLElement> = {
    prompt: textarea,
    agent: select,
    sessions: sessionSelect,
    open: openSession,
    "new-session": newSession,
  };
  const views = viewsBySession.get(session) ?? new Set();
  viewsBySession.set(session, views);
  views.add(controls);
  const settle = (el: HTMLElement, key: FocusKey, place: Element[]): void => {
    if (carried.key !== key || carried.place !== place || document.activeElement === el) return;
    const now = ancestors(el);
    const moved = el.isConnected && (now.length !== place.length || now.some((e, i) => e !== place[i]));
    if (el.isConnected && !moved) {
      carried.key = null; // the person went elsewhere (or the control was turned off)
      return;
    }
    if (!nothingFocused()) return;
    for (const view of [...views].reverse()) if (takeFocus(view[key], carried, key, draft)) return;
  };
  for (const [key, el] of Object.entries(controls) as [FocusKey, HTMLElement][]) {
    el.setAttribute(CARRIES_FOCUS, "");
    el.addEventListener("focus", () => {
      carried.key = key;
      carried.place = ancestors(el);
    });
    el.addEventListener("blur", () => {
      const place = carried.place;
      setTimeout(() => settle(el, key, place), 0);
    });
  }
  /** A control taken away (a quick prompt sent, an earlier session opened) hands the focus it
   * has to the prompt box, where the conversation goes on. */
  function toPromptBox(from: HTMLElement): void {
    if (from.contains(document.activeElement)) textarea.focus();
  }
  if (carried.key !== null) {
    let frames = 10; // the new view may be put in the page a little later
    const restore = (): void => {
      const key = carried.key;
      if (key === null) return;
      const el = controls[key];
      if (!el.isConnected && --frames > 0) schedule(restore, restore);
      else takeFocus(el, carried, key, draft);
    };
    schedule(restore, restore);
  }
  async function pick(id: string): Promise<void> {
    if (!id || id === agentId() || busy()) {
      render();
      return;
    }
    chosen = id;
    picking = true;
    render();
    await run({ type: "studio_select", agent_id: id });
    // Shown now (its conversation and a studio message naming it came before the reply), or
    // refused: the kernel's selection either way.
    chosen = null;
    picking = false;
    render();
  }
  select.addEventListener("change", () => void pick(select.value));

  function renderAgents(): void {
    const st = session.studio;
    const agents = st?.agents ?? [];
    const current = agentId();
    const same =
      select.options.length === agents.length &&
      agents.every((a, i) => select.options[i]?.value === a.id && select.options[i]?.textContent === (a.name || a.id));
    if (!same) {
      select.replaceChildren(
        ...agents.map((a) => h("option", { value: a.id, title: a.description ?? null }, a.name || a.id)),
      );
    }
    if (current !== null) select.value = current;
    select.disabled = agents.length === 0 || sending || kernelBusy();
  }

  function renderPrompts(): void {
    const agent = agentId();
    const list = (agent && session.studio?.quick_prompts[agent]) || [];
    const show = session.store.seq !== null && session.store.entries.length === 0 && list.length > 0;
    prompts.hidden = !show;
    if (!show) {
      prompts.replaceChildren();
      return;
    }
    const same = prompts.children.length === list.length && list.every((p, i) => prompts.children[i]?.textContent === p);
    if (!same) {
      prompts.replaceChildren(...list.map((p) => button(p, () => void sendText(p, false), { class: "anvia-button anvia-quick-prompt" })));
    }
    for (const b of prompts.querySelectorAll("button")) b.disabled = busy();
  }

  function renderSessions(): void {
    const st = session.studio;
    const list = st?.sessions ?? [];
    sessions.hidden = list.length === 0;
    const names = new Map((st?.agents ?? []).map((a) => [a.id, a.name || a.id]));
    const labels = list.map((s) =>
      [s.title || "Untitled session", names.size > 1 ? (names.get(s.agent_id) ?? s.agent_id) : "", formatTime(s.updated_at)]
        .filter(Boolean)
        .join(" · "),
    );
    const options = sessionSelect.options;
    const same =
      options.length === list.length &&
      list.every((s, i) => options[i]?.value === s.id && options[i]?.textContent === labels[i]);
    if (!same) {
      const kept = sessionSelect.value;
      sessionSelect.replaceChildren(...list.map((s, i) => h("option", { value: s.id, title: labels[i] }, labels[i])));
      if (list.some((s) => s.id === kept)) sessionSelect.value = kept;
    }
    sessionSelect.disabled = openSession.disabled = list.length === 0 || busy();
    newSession.disabled = busy(); // (the kernel refuses it while a run goes)
  }

  function render(): void {
    renderAgents();
    renderSessions();
    renderPrompts();
    const steers = steering();
    send.disabled = (busy() && !steers) || !textarea.value.trim() || agentId() === null;
    textarea.placeholder = steers ? STEER_PLACEHOLDER : "Message the agent";
  }

  function onEvent(ev: SessionEvent): void {
    if (ev.type === "studio" || ev.type === "status" || ev.type === "reset" || ev.type === "add") render();
    if (ev.type === "studio" && sendWhenKnown) {
      sendWhenKnown = false;
      void submit();
    }
    if (ev.type === "studio" || ev.type === "status") sendQueued();
  }

  render();
  const unsubscribe = session.subscribe(onEvent);
  const dispose = (): void => {
    unsubscribe();
    note.dispose();
    views.delete(controls);
  };
  return { header, prompts, composer, dispose };
}
