import { afterEach, describe, expect, it } from "vitest";
import type { Entry } from "../src/protocol";
import { batch, buttons, byLabel, byPlaceholder, fixture, mount, snapshot, status, tick, toolEntry, type } from "./helpers";

afterEach(() => document.body.replaceChildren());

const studioMsg = fixture("studio.json")[0] as Record<string, unknown>;

function setup(extra: Record<string, unknown> = {}) {
  const m = mount([], status("idle", { turn: 0 }), { mode: "studio" });
  m.model.kernel({ ...studioMsg, ...extra });
  const box = () => m.root.querySelector('textarea[aria-label="Message the agent"]') as HTMLTextAreaElement;
  const select = () => m.root.querySelector("select") as HTMLSelectElement;
  const prompts = () => m.root.querySelector(".anvia-quick-prompts") as HTMLElement;
  const enter = (init: KeyboardEventInit = {}) => {
    const ev = new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true, ...init });
    box().dispatchEvent(ev);
    return ev;
  };
  return { ...m, box, select, prompts, enter };
}

describe("studio", () => {
  it("shows the transcript view unless the mode trait is studio", () => {
    const plain = mount();
    expect(plain.root.querySelector("select")).toBeNull();
    expect(plain.root.querySelector('[placeholder="Message the agent"]')).toBeNull();
    const s = setup();
    expect(s.root.classList.contains("anvia-studio")).toBe(true);
    expect(s.root.querySelector(".anvia-transcript")).not.toBeNull();
    expect(buttons(s.root).map((b) => b.textContent)).toEqual([
      "New session",
      "Escalate ticket 42",
      "Summarise open tickets",
      "Send",
      "Stop",
    ]);
  });

  it("has an agent picker with the kernel's selection", () => {
    const s = setup();
    expect([...s.select().options].map((o) => [o.value, o.textContent])).toEqual([
      ["support-escalation", "Support escalation"],
      ["refunds", "Refunds"],
    ]);
    expect(s.select().value).toBe("support-escalation");
  });

  it("sends a quick prompt when clicked, and hides them once the transcript has entries", async () => {
    const s = setup();
    expect(s.prompts().hidden).toBe(false);
    byLabel(s.root, "Escalate ticket 42").click();
    expect(s.model.last("studio_send")).toEqual({
      type: "studio_send",
      request_id: expect.any(String),
      agent_id: "support-escalation",
      text: "Escalate ticket 42",
    });
    s.model.reply("studio_send");
    await tick();
    batch(s.model, { op: "add", entry: { kind: "user", id: "u1", text: "Escalate ticket 42" } });
    expect(s.prompts().hidden).toBe(true);
    batch(s.model, { op: "reset" });
    expect(s.prompts().hidden).toBe(false);
  });

  it("uses the picked agent and its quick prompts", async () => {
    const s = setup();
    s.select().value = "refunds";
    s.select().dispatchEvent(new Event("change"));
    expect(s.model.last("studio_select")).toEqual({ type: "studio_select", request_id: expect.any(String), agent_id: "refunds" });
    s.model.kernel(snapshot([], status("idle", { turn: 0, agent_id: "refunds" }), 1));
    s.model.kernel({ ...studioMsg, selected: "refunds" });
    s.model.reply("studio_select");
    await tick();
    expect(s.select().value).toBe("refunds");
    expect(s.prompts().hidden).toBe(true); // "refunds" has no quick prompts
    type(s.box(), "hello");
    byLabel(s.root, "Send").click();
    expect(s.model.last("studio_send")).toMatchObject({ agent_id: "refunds", text: "hello" });
  });

  describe("each agent's own conversation", () => {
    const support = (seq: number) =>
      snapshot(
        [
          { kind: "user", id: "e1", text: "Refund order A1001" },
          { kind: "assistant", id: "e2", turn: 1, text: "I'll issue the refund." },
          toolEntry("e3", { status: "done", result: "ok" }),
        ],
        status("success", { agent_id: "support-escalation" }),
        seq,
      );
    const refunds = (seq: number, entries: Entry[] = []) =>
      snapshot(entries, status(entries.length ? "success" : "idle", { agent_id: "refunds" }), seq);
    const texts = (root: HTMLElement) =>
      [...root.querySelectorAll(".anvia-transcript > .anvia-entry")].map((e) => e.textContent);
    const roles = (root: HTMLElement) =>
      [...root.querySelectorAll(".anvia-entry-assistant > .anvia-role")].map((e) => e.textContent);

    async function pick(s: ReturnType<typeof setup>, agent: string, shown: ReturnType<typeof snapshot>) {
      s.select().value = agent;
      s.select().dispatchEvent(new Event("change"));
      expect(s.model.last("studio_select").agent_id).toBe(agent);
      // Until the kernel answers, the picker stays on (a keyboard user keeps its focus), another
      // change meanwhile is undone, and nothing else is sent.
      expect(s.select().disabled).toBe(false);
      const asked = s.model.ofType("studio_select").length;
      s.select().value = [...s.select().options].find((o) => o.value !== agent)!.value;
      s.select().dispatchEvent(new Event("change"));
      expect(s.select().value).toBe(agent);
      expect(s.model.ofType("studio_select")).toHaveLength(asked);
      expect(s.prompts().querySelectorAll("button:not(:disabled)")).toHaveLength(0);
      s.model.kernel(shown);
      s.model.kernel({ ...studioMsg, selected: agent });
      s.model.reply("studio_select");
      await tick();
    }

    it("is shown when its agent is picked, with its quick prompts, and the earlier one comes back", async () => {
      const s = setup();
      s.model.kernel(support(1));
      expect(texts(s.root)[0]).toContain("Refund order A1001");
      expect(s.prompts().hidden).toBe(true);
      await pick(s, "refunds", refunds(2));
      expect(texts(s.root)).toEqual([]); // not the other agent's conversation under it
      expect(s.select().value).toBe("refunds");
      expect(s.select().disabled).toBe(false);
      // The greeter-like agent's replies carry its own entry ids, the same as the other's.
      s.model.kernel({ ...studioMsg, selected: "refunds", quick_prompts: { refunds: ["Hello!"] } });
      expect(s.prompts().hidden).toBe(false);
      expect(buttons(s.prompts()).map((b) => b.textContent)).toEqual(["Hello!"]);
      s.model.kernel(
        refunds(3, [
          { kind: "user", id: "e1", text: "Hello!" },
          { kind: "assistant", id: "e2", turn: 1, text: "Welcome!" },
        ]),
      );
      expect(roles(s.root)).toEqual(["Refunds"]);
      await pick(s, "support-escalation", support(4));
      expect(texts(s.root)).toHaveLength(3);
      expect(texts(s.root)[1]).toContain("I'll issue the refund.");
      expect(roles(s.root)).toEqual(["Support escalation"]);
      expect(s.root.textContent).not.toContain("Welcome!");
    });

    it("keeps a tool opened by a person to its own conversation", async () => {
      const s = setup();
      s.model.kernel(support(1));
      const tool = () => s.root.querySelector(".anvia-entry-tool") as HTMLDetailsElement;
      tool().open = true;
      tool().dispatchEvent(new Event("toggle"));
      await pick(s, "refunds", refunds(2, [toolEntry("e3", { status: "done", result: "done" })]));
      expect(tool().open).toBe(false);
      await pick(s, "support-escalation", support(3));
      expect(tool().open).toBe(true);
    });

    it("labels replies with the agent's name once the agents are known", () => {
      const m = mount([], status("idle", { turn: 0 }), { mode: "studio" });
      m.model.kernel(support(1)); // the snapshot comes before the studio message
      const labels = () => [...m.root.querySelectorAll(".anvia-entry-assistant > .anvia-role")].map((e) => e.textContent);
      expect(labels()).toEqual(["Assistant"]);
      m.model.kernel(studioMsg);
      expect(labels()).toEqual(["Support escalation"]);
      expect(m.root.querySelector(".anvia-entry-user > .anvia-role")?.textContent).toBe("You");
    });

    it("cannot be switched while a run is going, and a refusal keeps the kernel's agent", async () => {
      const s = setup();
      batch(s.model, { op: "status", status: status("running", { agent_id: "support-escalation" }) });
      expect(s.select().disabled).toBe(true);
      batch(s.model, { op: "status", status: status("success", { agent_id: "support-escalation" }) });
      expect(s.select().disabled).toBe(false);
      s.select().value = "refunds";
      s.select().dispatchEvent(new Event("change"));
      s.model.reply("studio_select", false, "A run is in progress");
      await tick();
      expect(s.select().value).toBe("support-escalation");
      expect(s.root.querySelector(".anvia-composer .anvia-error-text")?.textContent).toBe("A run is in progress");
    });
  });

  it("sends on Enter, inserts a newline on Shift+Enter, and ignores Enter while composing", async () => {
    const s = setup();
    type(s.box(), "first line");
    const shift = s.enter({ shiftKey: true });
    expect(shift.defaultPrevented).toBe(false);
    expect(s.model.ofType("studio_send")).toHaveLength(0);
    const composing = s.enter({ isComposing: true });
    expect(composing.defaultPrevented).toBe(false);
    const ime = s.enter({ keyCode: 229 });
    expect(ime.defaultPrevented).toBe(false);
    expect(s.model.ofType("studio_send")).toHaveLength(0);
    const plain = s.enter();
    expect(plain.defaultPrevented).toBe(true);
    expect(s.model.ofType("studio_send")).toHaveLength(1);
    expect(s.model.last("studio_send").text).toBe("first line");
    expect(s.box().value).toBe("");
  });

  it("sends what was typed before the kernel said which agents there are once it has", () => {
    const m = mount([], status("idle", { turn: 0 }), { mode: "studio" });
    const box = byPlaceholder<HTMLTextAreaElement>(m.root, "Message the agent");
    type(box, "too early");
    box.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true }));
    expect(m.model.ofType("studio_send")).toHaveLength(0);
    expect(box.value).toBe("too early"); // kept, and no error: the Studio is still being drawn
    expect(m.root.querySelector(".anvia-composer .anvia-error-text")?.textContent).toBe("");
    m.model.kernel(studioMsg);
    expect(m.model.ofType("studio_send")).toHaveLength(1);
    expect(m.model.last("studio_send").text).toBe("too early");
    expect(box.value).toBe("");
    m.model.kernel({ ...studioMsg, busy: false }); // once only
    expect(m.model.ofType("studio_send")).toHaveLength(1);
  });

  it("does not send empty text, and disables Send while empty or busy", async () => {
    const s = setup();
    const send = () => byLabel(s.root, "Send");
    expect(send().disabled).toBe(true);
    s.enter();
    expect(s.model.ofType("studio_send")).toHaveLength(0);
    type(s.box(), "hi");
    expect(send().disabled).toBe(false);
    batch(s.model, { op: "status", status: status("running") });
    // While a run goes the box steers it (steer.test.ts): Enter sends no new prompt.
    s.enter();
    expect(s.model.ofType("studio_send")).toHaveLength(0);
    expect(s.model.last("steer")).toMatchObject({ type: "steer", text: "hi" });
    batch(s.model, { op: "status", status: status("success") });
    s.model.reply("steer", false, "No run in progress: the message was not sent.");
    await tick();
    expect(s.box().value).toBe("hi");
    s.model.kernel({ ...studioMsg, busy: true });
    expect(send().disabled).toBe(true);
  });

  it("sends a message typed while the previous one was on its way once the kernel answered", async () => {
    // (Enter pressed again within a moment of the first did nothing, with no word why)
    const s = setup();
    type(s.box(), "hello");
    s.enter();
    type(s.box(), "and also this");
    s.enter();
    expect(s.model.ofType("studio_send")).toHaveLength(1);
    expect(s.model.ofType("steer")).toHaveLength(0);
    expect(s.box().value).toBe("and also this"); // kept meanwhile
    s.model.kernel({ ...studioMsg, busy: true });
    s.model.reply("studio_send", true);
    await tick();
    expect(s.model.ofType("steer")).toHaveLength(0); // (not yet told the run goes on)
    batch(s.model, { op: "status", status: status("running") });
    expect(s.model.last("steer")).toMatchObject({ type: "steer", text: "and also this" });
    expect(s.box().value).toBe("");
  });

  it("sends a message typed as a run ended once the kernel has taken the run's end in", async () => {
    // (the status said the run was done before the Studio said it was free: Enter then did
    // nothing, with no word why, and the text stayed in the box)
    const s = setup();
    byLabel(s.root, "Escalate ticket 42").click();
    s.model.reply("studio_send");
    await tick();
    s.model.kernel({ ...studioMsg, busy: true });
    batch(s.model, { op: "status", status: status("running") });
    batch(s.model, { op: "status", status: status("success") });
    type(s.box(), "second message");
    s.enter();
    expect(s.model.ofType("studio_send")).toHaveLength(1);
    expect(s.model.ofType("steer")).toHaveLength(0);
    expect(s.box().value).toBe("second message"); // kept meanwhile
    s.model.kernel({ ...studioMsg, busy: false });
    expect(s.model.ofType("studio_send")).toHaveLength(2);
    expect(s.model.last("studio_send")).toMatchObject({ text: "second message" });
    expect(s.model.ofType("steer")).toHaveLength(0);
    expect(s.box().value).toBe("");
  });

  it("does not send by itself a message whose text was changed while the previous one was on its way", async () => {
    const s = setup();
    type(s.box(), "hello");
    s.enter();
    type(s.box(), "and also");
    s.enter();
    type(s.box(), "and also this, still typing");
    s.model.kernel({ ...studioMsg, busy: true });
    s.model.reply("studio_send", true);
    await tick();
    batch(s.model, { op: "status", status: status("running") });
    expect(s.model.ofType("steer")).toHaveLength(0);
    expect(s.box().value).toBe("and also this, still typing");
  });

  it("keeps a message typed while the previous one was on its way when that one is refused", async () => {
    const s = setup();
    type(s.box(), "hello");
    s.enter();
    type(s.box(), "second");
    s.enter();
    s.model.reply("studio_send", false, "A run is already in progress");
    await tick();
    expect(s.model.ofType("studio_send")).toHaveLength(1);
    expect(s.model.ofType("steer")).toHaveLength(0);
    expect(s.box().value).toBe("second");
  });

  it("restores the text and shows the error when sending is refused", async () => {
    const s = setup();
    type(s.box(), "hello");
    byLabel(s.root, "Send").click();
    expect(s.box().value).toBe("");
    s.model.reply("studio_send", false, "A run is already in progress");
    await tick();
    expect(s.box().value).toBe("hello");
    expect(s.root.querySelector(".anvia-composer .anvia-error-text")?.textContent).toBe("A run is already in progress");
  });

  it("starts a new session", () => {
    const s = setup();
    byLabel(s.root, "New session").click();
    expect(s.model.last("studio_new_session")).toEqual({ type: "studio_new_session", request_id: expect.any(String) });
  });

  describe("earlier sessions", () => {
    const withSessions = fixture("studio_with_sessions.json")[0] as Record<string, unknown>;
    const earlier = withSessions.sessions as Array<{ id: string; title: string }>;
    const picker = (root: HTMLElement) => root.querySelector(".anvia-sessions") as HTMLElement;
    const sessionSelect = (root: HTMLElement) =>
      root.querySelector('select[aria-label="Earlier sessions"]') as HTMLSelectElement;

    it("are hidden when the kernel has none (or sends none)", () => {
      const s = setup();
      expect(picker(s.root).hidden).toBe(true);
      s.model.kernel({ ...studioMsg, sessions: [] });
      expect(picker(s.root).hidden).toBe(true);
      expect(buttons(s.root).map((b) => b.textContent)).not.toContain("Open");
    });

    it("are listed newest first, as text, and the chosen one opens with Open", async () => {
      const s = setup({ sessions: earlier });
      expect(picker(s.root).hidden).toBe(false);
      expect(picker(s.root).getAttribute("role")).toBe("group");
      const options = [...sessionSelect(s.root).options];
      expect(options.map((o) => o.value)).toEqual(earlier.map((e) => e.id));
      // Several agents: each option names its agent; a title is text, never markup.
      expect(options[0]?.textContent).toMatch(/^Escalate ticket 42 · Support escalation · ./);
      expect(options[1]?.textContent).toContain("<b>Summarise</b> open tickets");
      expect(sessionSelect(s.root).querySelector("b")).toBeNull();
      sessionSelect(s.root).value = earlier[1]!.id;
      byLabel(s.root, "Open").click();
      expect(s.model.last("studio_open_session")).toEqual({
        type: "studio_open_session",
        request_id: expect.any(String),
        session_id: earlier[1]!.id,
      });
      expect(byLabel(s.root, "Open").disabled).toBe(true); // while the kernel answers
      s.model.reply("studio_open_session");
      await tick();
      expect(byLabel(s.root, "Open").disabled).toBe(false);
    });

    it("do not send later by themselves a message Enter was pressed on while one opened", async () => {
      // (it was queued, then steered into the next run a cell started, with no Enter)
      const s = setup({ sessions: earlier });
      sessionSelect(s.root).value = earlier[1]!.id;
      byLabel(s.root, "Open").click();
      type(s.box(), "typed while it opened");
      s.enter();
      s.model.reply("studio_open_session");
      await tick();
      s.model.kernel({ ...studioMsg, sessions: earlier, busy: true });
      batch(s.model, { op: "status", status: status("running") });
      expect(s.model.ofType("steer")).toHaveLength(0);
      expect(s.model.ofType("studio_send")).toHaveLength(0);
      expect(s.box().value).toBe("typed while it opened");
    });

    it("open with Enter on the picker, and follow the kernel's agent afterwards", async () => {
      const s = setup({ sessions: earlier });
      s.select().value = "refunds";
      s.select().dispatchEvent(new Event("change"));
      s.model.kernel({ ...studioMsg, selected: "refunds", sessions: earlier });
      s.model.reply("studio_select");
      await tick();
      expect(s.select().value).toBe("refunds");
      const ev = new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true });
      sessionSelect(s.root).dispatchEvent(ev);
      expect(ev.defaultPrevented).toBe(true);
      expect(s.model.last("studio_open_session").session_id).toBe(earlier[0]!.id);
      s.model.reply("studio_open_session");
      await tick();
      s.model.kernel({ ...studioMsg, selected: "support-escalation", sessions: earlier.slice(1) });
      expect(s.select().value).toBe("support-escalation");
      expect([...sessionSelect(s.root).options].map((o) => o.value)).toEqual([earlier[1]!.id]);
    });

    it("cannot be opened while a run is going, and show a refusal", async () => {
      const s = setup({ sessions: earlier });
      batch(s.model, { op: "status", status: status("running") });
      expect(byLabel(s.root, "Open").disabled).toBe(true);
      expect(sessionSelect(s.root).disabled).toBe(true);
      batch(s.model, { op: "status", status: status("success") });
      byLabel(s.root, "Open").click();
      s.model.reply("studio_open_session", false, "Unknown session 'x'.");
      await tick();
      expect(s.root.querySelector(".anvia-composer .anvia-error-text")?.textContent).toBe("Unknown session 'x'.");
    });
  });

  it("has a single Stop, enabled while a run is going", () => {
    const s = setup();
    expect(byLabel(s.root, "Stop").disabled).toBe(true);
    batch(s.model, { op: "status", status: status("waiting") });
    expect(byLabel(s.root, "Stop").disabled).toBe(false);
    byLabel(s.root, "Stop").click();
    expect(s.model.last("stop")).toMatchObject({ reason: null });
  });
});
