// The Studio (notebook Playground) controls: agent picker, "Earlier sessions" picker and "New
// session" above the transcript, quick prompts while the transcript is empty, and the prompt box
// with "Send" below it. Each agent has its own conversation: picking one asks the kernel to show
// it (`studio_select`), picking the first one again shows the earlier one.
import { button, formatTime, h } from "../dom";
import { schedule } from "../frame";
import type { Session, SessionEvent } from "../session";
import { runGoesOn, steer } from "./steer";

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
  const composer = h("div", { class: "anvia-composer" }, h("div", { class: "anvia-row" }, textarea, send), error);

  /** The agent the user picked here while the kernel is asked to show its conversation; else
   * the kernel's selection counts. */
  let chosen: string | null = null;
  let sending = false;

  const agentId = (): string | null => {
    const st = session.studio;
    if (!st) return null;
    if (chosen && st.agents.some((a) => a.id === chosen)) return chosen;
    return st.selected || st.agents[0]?.id || null;
  };
  const busy = (): boolean => {
    const state = session.store.status.state;
    return sending || !!session.studio?.busy || state === "running" || state === "waiting";
  };

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
    sending = true;
    setError(null);
    textarea.value = "";
    keepDraft();
    render();
    const refused = await steer(session, text);
    sending = false;
    if (refused) {
      setError(refused);
      if (!textarea.value) {
        textarea.value = text;
        keepDraft();
      }
    }
    render();
  }

  /** Enter was pressed before the kernel said which agents there are (the Studio was just
   * drawn): the box's text goes as soon as it has. */
  let sendWhenKnown = false;

  async function sendText(text: string, fromBox: boolean): Promise<void> {
    if (fromBox && !session.studio && text.trim()) {
      sendWhenKnown = true;
      return;
    }
    if (fromBox && text.trim() && steering()) return steerText(text);
    const agent = agentId();
    if (!text.trim() || busy()) return;
    if (!agent) {
      setError("No agent to send to");
      return;
    }
    sending = true;
    if (fromBox) {
      textarea.value = "";
      keepDraft();
    }
    render();
    const ok = await run({ type: "studio_send", agent_id: agent, text });
    sending = false;
    if (!ok && fromBox && !textarea.value) {
      textarea.value = text;
      keepDraft();
    }
    render();
  }
  const submit = (): Promise<void> => sendText(textarea.value, true);

  async function openChosen(): Promise<void> {
    const id = sessionSelect.value;
    if (!id || busy()) return;
    sending = true;
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
  textarea.addEventListener("focus", () => {
    draft.focused = true;
  });
  // A view being removed loses its focus too: only a blur while still in the page counts.
  textarea.addEventListener("blur", () => {
    if (textarea.isConnected) draft.focused = false;
  });
  if (draft.focused) {
    schedule(textarea, () => {
      const active = document.activeElement;
      if (!textarea.isConnected || (active && active !== document.body)) return;
      textarea.focus();
      textarea.setSelectionRange(draft.start, draft.end);
    });
  }
  async function pick(id: string): Promise<void> {
    if (!id || id === agentId() || busy()) {
      render();
      return;
    }
    chosen = id;
    sending = true;
    render();
    await run({ type: "studio_select", agent_id: id });
    // Shown now (its conversation and a studio message naming it came before the reply), or
    // refused: the kernel's selection either way.
    chosen = null;
    sending = false;
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
    select.disabled = agents.length === 0 || busy();
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
  }

  function render(): void {
    renderAgents();
    renderSessions();
    renderPrompts();
    const steers = steering();
    send.disabled = (busy() && !steers) || !textarea.value.trim() || agentId() === null;
  }

  function onEvent(ev: SessionEvent): void {
    if (ev.type === "studio" || ev.type === "status" || ev.type === "reset" || ev.type === "add") render();
    if (ev.type === "studio" && sendWhenKnown) {
      sendWhenKnown = false;
      void submit();
    }
  }

  render();
  const unsubscribe = session.subscribe(onEvent);
  return { header, prompts, composer, dispose: unsubscribe };
}
