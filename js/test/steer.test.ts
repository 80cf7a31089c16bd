import { afterEach, describe, expect, it } from "vitest";
import { USER_LABEL_STEERED } from "../src/views/entries";
import { STEER_PLACEHOLDER, UNSENT_NOTE } from "../src/views/steer";
import { batch, buttons, byLabel, fixture, mount, status, tick, type } from "./helpers";

afterEach(() => document.body.replaceChildren());

const enter = (el: HTMLElement, init: KeyboardEventInit = {}): KeyboardEvent => {
  const ev = new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true, ...init });
  el.dispatchEvent(ev);
  return ev;
};

describe("the transcript view's message box (show())", () => {
  const box = (root: HTMLElement) => root.querySelector(".anvia-steer") as HTMLElement;
  const input = (root: HTMLElement) => box(root).querySelector("textarea") as HTMLTextAreaElement;

  it("keeps Shift and Enter from the notebook around it, which cancelled the new line", () => {
    // JupyterLab, told of an Enter in a cell, cancels the line break the text box would type.
    const m = mount([], status("running"));
    const heard: string[] = [];
    const listen = (ev: KeyboardEvent) => heard.push(`${ev.ctrlKey ? "Ctrl+" : ""}${ev.shiftKey ? "Shift+" : ""}${ev.key}`);
    document.addEventListener("keydown", listen);
    try {
      // (Shift, held down while Enter is pressed: JupyterLab waited for its line break)
      input(m.root).dispatchEvent(new KeyboardEvent("keydown", { key: "Shift", shiftKey: true, bubbles: true }));
      expect(enter(input(m.root), { shiftKey: true }).defaultPrevented).toBe(false);
      enter(input(m.root));
      input(m.root).dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", ctrlKey: true, bubbles: true }));
      input(m.root).dispatchEvent(new KeyboardEvent("keydown", { key: "a", bubbles: true }));
    } finally {
      document.removeEventListener("keydown", listen);
    }
    expect(heard).toEqual(["Ctrl+Enter", "a"]); // (other keys still reach it)
  });

  it("is shown while the run goes (running or waiting), hidden before and after", () => {
    const m = mount([], status("running"));
    expect(box(m.root).hidden).toBe(false);
    expect(input(m.root).placeholder).toBe(STEER_PLACEHOLDER);
    batch(m.model, { op: "status", status: status("waiting") });
    expect(box(m.root).hidden).toBe(false);
    batch(m.model, { op: "status", status: status("success") });
    expect(box(m.root).hidden).toBe(true);
    const idle = mount([], status("idle", { turn: 0 }));
    expect(box(idle.root).hidden).toBe(true);
  });

  it("sends the text into the run with Enter (Shift+Enter is a new line); Stop still stops", () => {
    const m = mount([], status("running"));
    type(input(m.root), "also split it by region");
    expect(enter(input(m.root), { shiftKey: true }).defaultPrevented).toBe(false);
    expect(m.model.ofType("steer")).toHaveLength(0);
    expect(enter(input(m.root)).defaultPrevented).toBe(true);
    expect(m.model.last("steer")).toEqual({ type: "steer", request_id: expect.any(String), text: "also split it by region" });
    expect(input(m.root).value).toBe("");
    byLabel(m.root, "Stop").click();
    expect(m.model.last("stop")).toMatchObject({ type: "stop" });
  });

  it("sends with the Send button too, never a blank text", () => {
    const m = mount([], status("waiting"));
    const send = byLabel(box(m.root), "Send");
    expect(send.disabled).toBe(true);
    type(input(m.root), "   ");
    enter(input(m.root));
    expect(send.disabled).toBe(true);
    expect(m.model.ofType("steer")).toHaveLength(0);
    type(input(m.root), "in euros");
    expect(send.disabled).toBe(false);
    send.click();
    expect(m.model.last("steer").text).toBe("in euros");
  });

  it("gives the text back with the kernel's reason when it is refused", async () => {
    const m = mount([], status("running"));
    type(input(m.root), "too late");
    enter(input(m.root));
    m.model.reply("steer", false, "No run in progress: the message was not sent.");
    await tick();
    expect(input(m.root).value).toBe("too late");
    expect(box(m.root).querySelector(".anvia-error-text")?.textContent).toBe("No run in progress: the message was not sent.");
  });

  it("keeps a message typed but not sent when the run ends: shown, copyable, discarded only on Discard", () => {
    // The box hid as the run ended, with the text in it: typed text was silently lost.
    const m = mount([], status("running"));
    type(input(m.root), "also split it\nby region");
    batch(m.model, { op: "status", status: status("success") });
    expect(box(m.root).hidden).toBe(false);
    expect(input(m.root).value).toBe("also split it\nby region");
    expect(input(m.root).readOnly).toBe(true); // (selectable and copyable, not to be sent)
    const note = box(m.root).querySelector(".anvia-steer-unsent") as HTMLElement;
    expect(note.hidden).toBe(false);
    expect(note.textContent).toBe(UNSENT_NOTE);
    expect(input(m.root).getAttribute("aria-describedby")).toBe(note.id);
    expect(buttons(box(m.root)).map((b) => b.textContent)).toEqual(["Discard"]);
    enter(input(m.root));
    expect(m.model.ofType("steer")).toHaveLength(0);
    input(m.root).focus();
    byLabel(box(m.root), "Discard").click();
    expect(input(m.root).value).toBe("");
    expect(box(m.root).hidden).toBe(true);
    expect(document.activeElement).toBe(m.root.querySelector(".anvia-transcript")); // (not lost)
  });

  it("hides an empty or blank box when the run ends, and lets a kept message be sent if a run goes again", () => {
    const m = mount([], status("running"));
    type(input(m.root), "  ");
    batch(m.model, { op: "status", status: status("cancelled") });
    expect(box(m.root).hidden).toBe(true);
    const kept = mount([], status("running"));
    type(input(kept.root), "by region");
    batch(kept.model, { op: "status", status: status("error", { error: "boom" }) });
    expect(box(kept.root).hidden).toBe(false);
    batch(kept.model, { op: "status", status: status("running") });
    expect(input(kept.root).readOnly).toBe(false);
    expect((box(kept.root).querySelector(".anvia-steer-unsent") as HTMLElement).hidden).toBe(true);
    enter(input(kept.root));
    expect(kept.model.last("steer").text).toBe("by region");
  });

  it("keeps the text a refusal gave back when the run ended meanwhile, with the kernel's reason", async () => {
    const m = mount([], status("running"));
    type(input(m.root), "too late");
    enter(input(m.root));
    batch(m.model, { op: "status", status: status("success") });
    m.model.reply("steer", false, "No run in progress: the message was not sent.");
    await tick();
    expect(box(m.root).hidden).toBe(false);
    expect(input(m.root).value).toBe("too late");
    expect(box(m.root).querySelector(".anvia-error-text")?.textContent).toBe("No run in progress: the message was not sent.");
  });
});

describe("a steered message in the transcript", () => {
  it("is a user bubble marked as sent during the run, where the run delivered it", () => {
    const m = mount([
      { kind: "user", id: "e1", text: "Summarise the sales" },
      { kind: "assistant", id: "e2", turn: 1, text: "Working on it." },
    ]);
    batch(m.model, { op: "add", entry: { kind: "user", id: "e3", text: "also split it by region", steered: true } });
    const entries = [...m.root.querySelectorAll(".anvia-transcript > .anvia-entry")];
    expect(entries.map((e) => e.querySelector(".anvia-role")?.textContent)).toEqual(["You", "Assistant", USER_LABEL_STEERED]);
    expect(entries[2]?.classList.contains("anvia-steered")).toBe(true);
    expect(entries[0]?.classList.contains("anvia-steered")).toBe(false);
    expect(entries[2]?.textContent).toContain("also split it by region");
  });
});

describe("the Studio's message box while a run goes", () => {
  const studioMsg = fixture("studio.json")[0] as Record<string, unknown>;

  it("steers the run instead of starting one, and starts one again once it has ended", async () => {
    const m = mount([], status("idle", { turn: 0 }), { mode: "studio" });
    m.model.kernel(studioMsg);
    const textarea = m.root.querySelector(".anvia-studio .anvia-composer textarea") as HTMLTextAreaElement;
    expect(m.root.querySelector(".anvia-steer")).toBeNull(); // the Studio's own box steers
    batch(m.model, { op: "status", status: status("running") });
    type(textarea, "focus on refunds");
    expect(textarea.disabled).toBe(false);
    expect(byLabel(m.root, "Send").disabled).toBe(false);
    enter(textarea);
    expect(m.model.last("steer").text).toBe("focus on refunds");
    expect(m.model.ofType("studio_send")).toHaveLength(0);
    m.model.reply("steer");
    await tick();
    expect(textarea.value).toBe("");
    batch(m.model, { op: "status", status: status("success") });
    type(textarea, "next question");
    enter(textarea);
    expect(m.model.last("studio_send").text).toBe("next question");
    expect(m.model.ofType("steer")).toHaveLength(1);
  });
});
