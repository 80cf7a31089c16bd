import { afterEach, describe, expect, it } from "vitest";
import type { WidgetModel } from "../src/session";
import widget from "../src/widget";
import { FakeModel, flushFrames, snapshot, status } from "./helpers";

afterEach(() => {
  document.body.replaceChildren();
});

/** A fresh wrapper of `model`, as anywidget hands to `initialize` and to each `render`. */
const proxy = (model: FakeModel): WidgetModel => ({
  get: (name) => model.get(name),
  send: (content) => model.send(content),
  on: (event, cb) => model.on(event, cb),
  off: (event, cb) => model.off(event, cb),
});

const assistant = (text: string) => ({ kind: "assistant" as const, id: "e1", turn: 1, text });

describe("one session per model", () => {
  it("shares one session between initialize and every view, though each gets its own proxy", () => {
    const model = new FakeModel({ _anvia_key: "k1" });
    const dispose = widget.initialize({ model: proxy(model) });
    expect(model.ofType("sync")).toHaveLength(1);
    model.kernel(snapshot([assistant("Hello")], status(), 0));
    const first = document.createElement("div");
    const second = document.createElement("div");
    const unmountFirst = widget.render({ model: proxy(model), el: first });
    widget.render({ model: proxy(model), el: second });
    unmountFirst();
    const third = document.createElement("div");
    widget.render({ model: proxy(model), el: third });
    flushFrames();
    // No view asked for its own snapshot, and every view shows the state at once.
    expect(model.ofType("sync")).toHaveLength(1);
    expect(model.listenerCount("msg:custom")).toBe(1);
    for (const el of [second, third]) expect(el.querySelector(".anvia-md")?.textContent).toContain("Hello");
    dispose();
    expect(model.listenerCount("msg:custom")).toBe(0);
  });

  it("keeps the sessions of two models apart", () => {
    const a = new FakeModel({ _anvia_key: "ka" });
    const b = new FakeModel({ _anvia_key: "kb" });
    const disposers = [widget.initialize({ model: proxy(a) }), widget.initialize({ model: proxy(b) })];
    a.kernel(snapshot([assistant("from a")], status(), 0));
    b.kernel(snapshot([assistant("from b")], status(), 0));
    const el = document.createElement("div");
    widget.render({ model: proxy(b), el });
    expect(el.querySelector(".anvia-md")?.textContent).toContain("from b");
    disposers.forEach((d) => d());
  });
});
