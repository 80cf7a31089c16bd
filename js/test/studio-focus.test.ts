// The Studio keeps a keyboard user's focus: across the redraws of its output the kernel makes
// after a run, an agent change or a new session (a new view replaces the old one), through an
// agent change made with the keyboard, and after a quick prompt is sent.
import { afterEach, describe, expect, it } from "vitest";
import widget from "../src/widget";
import { FakeModel, byLabel, fixture, flushFrames, snapshot, status, tick, type } from "./helpers";

const studioMsg = fixture("studio.json")[0] as Record<string, unknown>;
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const c of cleanups.splice(0).reverse()) c();
  document.body.replaceChildren();
});

/** A Studio model, answered as the kernel would, and its views: each in its own "cell" (the
 * output area a redraw draws the new view into). */
function studio() {
  const model = new FakeModel({ mode: "studio", _anvia_key: `k${Math.random().toString(36).slice(2)}` });
  cleanups.push(widget.initialize({ model }));
  model.kernel(snapshot([], status("idle", { turn: 0 }), 0));
  model.kernel(studioMsg);
  const draw = (cell: HTMLElement) => {
    const el = document.createElement("div");
    cell.appendChild(el);
    const dispose = widget.render({ model, el });
    cleanups.push(dispose);
    const q = <T extends Element>(sel: string) => el.querySelector(sel) as T;
    return {
      el,
      dispose,
      box: () => q<HTMLTextAreaElement>('textarea[placeholder="Message the agent"]'),
      picker: () => q<HTMLSelectElement>('select[aria-label="Agent"]'),
      root: () => q<HTMLElement>(".anvia-root"),
    };
  };
  const cell = () => document.body.appendChild(document.createElement("div"));
  return { model, draw, cell };
}

type View = ReturnType<ReturnType<typeof studio>["draw"]>;

/** Take a view out of the page as Chromium does: the focused control is blurred while it is
 * still in the page, then the view goes. */
function takeOut(view: View): void {
  const active = document.activeElement;
  if (active instanceof HTMLElement && view.el.contains(active)) active.blur();
  view.dispose();
  view.el.remove();
}

describe("studio focus", () => {
  it("the prompt box keeps focus when the kernel redraws the view after the reply", async () => {
    const s = studio();
    const cell = s.cell();
    const old = s.draw(cell);
    old.box().focus();
    type(old.box(), "hello");
    old.box().dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true }));
    expect(s.model.last("studio_send").text).toBe("hello");
    s.model.reply("studio_send");
    await tick();
    // The run ends: the old view goes, then the new one is drawn in its place.
    takeOut(old);
    await tick();
    const redrawn = s.draw(cell);
    flushFrames();
    expect(document.activeElement).toBe(redrawn.box());
  });

  it("hands the focus over when the new view is drawn before the old one goes", async () => {
    const s = studio();
    const cell = s.cell();
    const old = s.draw(cell);
    old.box().focus();
    type(old.box(), "draft");
    old.box().setSelectionRange(2, 2);
    old.box().dispatchEvent(new Event("select"));
    const redrawn = s.draw(cell);
    flushFrames(); // the old box still has the focus
    expect(document.activeElement).toBe(old.box());
    takeOut(old);
    await tick();
    expect(document.activeElement).toBe(redrawn.box());
    expect(redrawn.box().value).toBe("draft");
    expect(redrawn.box().selectionStart).toBe(2);
  });

  it("does not take the focus back once the person went elsewhere", async () => {
    const s = studio();
    const cell = s.cell();
    const old = s.draw(cell);
    old.box().focus();
    old.box().blur(); // a click on the page, on nothing focusable
    await tick();
    takeOut(old);
    await tick();
    const redrawn = s.draw(cell);
    flushFrames();
    expect(document.activeElement).not.toBe(redrawn.box());

    const other = document.body.appendChild(document.createElement("input"));
    redrawn.box().focus();
    other.focus(); // another cell's editor
    await tick();
    takeOut(redrawn);
    await tick();
    const again = s.draw(cell);
    flushFrames();
    expect(document.activeElement).toBe(other);
    other.blur();
    flushFrames();
    await tick();
    expect(document.activeElement).not.toBe(again.box());
  });

  it("gives the focus to the redrawn view in the same output, not to another view", async () => {
    const s = studio();
    const first = s.cell();
    const second = s.cell();
    const a = s.draw(first);
    const b = s.draw(second);
    b.box().focus();
    // Both outputs are redrawn; the first cell's comes first.
    takeOut(a);
    takeOut(b);
    await tick();
    const a2 = s.draw(first);
    const b2 = s.draw(second);
    flushFrames();
    expect(document.activeElement).toBe(b2.box());
    expect(a2.box()).not.toBe(document.activeElement);
  });

  it("keeps the agent picker's focus through a change made with the keyboard and the redraw", async () => {
    const s = studio();
    const cell = s.cell();
    const old = s.draw(cell);
    old.picker().focus();
    old.picker().value = "refunds"; // ArrowDown
    old.picker().dispatchEvent(new Event("change"));
    expect(s.model.last("studio_select").agent_id).toBe("refunds");
    expect(old.picker().disabled).toBe(false);
    expect(document.activeElement).toBe(old.picker());
    s.model.kernel(snapshot([], status("idle", { turn: 0, agent_id: "refunds" }), 1));
    s.model.kernel({ ...studioMsg, selected: "refunds" });
    s.model.reply("studio_select");
    await tick();
    expect(document.activeElement).toBe(old.picker());
    takeOut(old); // the kernel redraws the output after the change
    await tick();
    const redrawn = s.draw(cell);
    flushFrames();
    expect(document.activeElement).toBe(redrawn.picker());
    expect(redrawn.picker().value).toBe("refunds");
  });

  it("moves the focus to the prompt box when a quick prompt is sent", async () => {
    const s = studio();
    const view = s.draw(s.cell());
    const quick = byLabel(view.root(), "Escalate ticket 42");
    quick.focus();
    quick.click(); // Enter on the button
    expect(s.model.last("studio_send").text).toBe("Escalate ticket 42");
    expect(document.activeElement).toBe(view.box());
    s.model.reply("studio_send");
    await tick();
    expect(document.activeElement).toBe(view.box());
  });

  it("a message Enter was pressed on as a run ended goes from the view the kernel redrew", async () => {
    // (the status said the run was done before the Studio said it was free, and the kernel
    // redrew the Studio meanwhile: the old view held the message, and it was never sent)
    const s = studio();
    const cell = s.cell();
    const old = s.draw(cell);
    type(old.box(), "first");
    old.box().dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true }));
    s.model.reply("studio_send");
    await tick();
    s.model.kernel({ ...studioMsg, busy: true });
    s.model.kernel({ type: "batch", seq: 1, ops: [{ op: "status", status: status("success") }] });
    type(old.box(), "second message");
    old.box().dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true }));
    expect(s.model.ofType("studio_send")).toHaveLength(1);
    takeOut(old); // the kernel redraws the Studio as the run ends
    const redrawn = s.draw(cell);
    expect(redrawn.box().value).toBe("second message");
    s.model.kernel({ ...studioMsg, busy: false });
    expect(s.model.ofType("studio_send")).toHaveLength(2);
    expect(s.model.last("studio_send").text).toBe("second message");
    expect(redrawn.box().value).toBe("");
  });

  it("a queued message goes from any view of the Studio, and leaves every view's box", async () => {
    // (two views of one Studio: the first view to hear the kernel took the message, compared
    // it with its own empty box, and sent nothing; a redrawn view kept a sent message, to be
    // sent again)
    const s = studio();
    const a = s.draw(s.cell());
    const b = s.draw(s.cell());
    const boxOf = (view: View) => view.el.querySelector('textarea[aria-label="Message the agent"]') as HTMLTextAreaElement;
    const enter = (box: HTMLTextAreaElement) =>
      box.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true, cancelable: true }));
    type(boxOf(b), "first");
    enter(boxOf(b));
    type(boxOf(b), "next");
    enter(boxOf(b)); // (while the first is on its way)
    s.model.kernel({ ...studioMsg, busy: true });
    s.model.kernel({ type: "batch", seq: 1, ops: [{ op: "status", status: status("running") }] });
    s.model.reply("studio_send");
    await tick();
    expect(s.model.ofType("steer").map((m) => m.text)).toEqual(["next"]);
    expect([boxOf(a).value, boxOf(b).value]).toEqual(["", ""]);
    s.model.reply("steer");
    await tick();
    s.model.kernel({ type: "batch", seq: 2, ops: [{ op: "status", status: status("success") }] });
    type(boxOf(a), "as it ends");
    enter(boxOf(a)); // (the kernel still takes the run's end in)
    const redrawn = s.draw(s.cell()); // drawn before the old view leaves
    s.model.kernel({ ...studioMsg, busy: false });
    expect(s.model.ofType("studio_send").map((m) => m.text)).toEqual(["first", "as it ends"]);
    expect([boxOf(a).value, boxOf(b).value, boxOf(redrawn).value]).toEqual(["", "", ""]);
  });
});

