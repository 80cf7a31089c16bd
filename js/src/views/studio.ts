// The Studio (notebook Playground) controls: agent picker and "New session" above the transcript,
// quick prompts while the transcript is empty, and the prompt box with "Send" below it.
import { button, h } from "../dom";
import type { Session, SessionEvent } from "../session";

export interface StudioControls {
  header: HTMLElement;
  prompts: HTMLElement;
  composer: HTMLElement;
  dispose(): void;
}

export function studioControls(session: Session): StudioControls {
  const select = h("select", { class: "anvia-select", "aria-label": "Agent" });
  const newSession = button("New session", () => void run({ type: "studio_new_session" }));
  const header = h("div", { class: "anvia-studio-header" }, h("label", { class: "anvia-field" }, "Agent ", select), newSession);
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

  /** The agent the user picked here, else the kernel's selection. */
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

  async function sendText(text: string, fromBox: boolean): Promise<void> {
    const agent = agentId();
    if (!text.trim() || busy()) return;
    if (!agent) {
      setError("No agent to send to");
      return;
    }
    sending = true;
    if (fromBox) textarea.value = "";
    render();
    const ok = await run({ type: "studio_send", agent_id: agent, text });
    sending = false;
    if (!ok && fromBox && !textarea.value) textarea.value = text;
    render();
  }
  const submit = (): Promise<void> => sendText(textarea.value, true);

  textarea.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter" || ev.shiftKey) return; // Shift+Enter: newline
    if (ev.isComposing || ev.keyCode === 229) return; // IME composing
    ev.preventDefault();
    void submit();
  });
  textarea.addEventListener("input", () => render());
  select.addEventListener("change", () => {
    chosen = select.value;
    render();
  });

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
    select.disabled = agents.length === 0;
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

  function render(): void {
    renderAgents();
    renderPrompts();
    send.disabled = busy() || !textarea.value.trim() || agentId() === null;
  }

  function onEvent(ev: SessionEvent): void {
    if (ev.type === "studio" || ev.type === "status" || ev.type === "reset" || ev.type === "add") render();
  }

  render();
  const unsubscribe = session.subscribe(onEvent);
  return { header, prompts, composer, dispose: unsubscribe };
}
