// Where the widget manager exposes the notebook (JupyterLab, Notebook 7), a drawn view's cell
// output keeps only the static copy in the document: a notebook saved at any time reopens
// readable without its kernel.
import { afterEach, describe, expect, it } from "vitest";
import { WIDGET_MIME, makeOutputsStatic } from "../src/outputs";
import widget from "../src/widget";
import { FakeModel, snapshot, status } from "./helpers";

afterEach(() => document.body.replaceChildren());

const KEY = "k42";

type Output = { output_type: string; data: Record<string, unknown>; metadata: Record<string, unknown> };

/** A notebook document as JupyterLab's model offers it: cells with output lists. */
class FakeOutputs {
  constructor(public items: Output[]) {}
  get length(): number {
    return this.items.length;
  }
  get(i: number) {
    const item = this.items[i]!;
    return { data: item.data, toJSON: () => structuredClone(item) };
  }
  set(i: number, value: Output): void {
    this.items[i] = value;
  }
}

const bundle = (key: string, withWidget = true): Output => ({
  output_type: "display_data",
  data: {
    ...(withWidget ? { [WIDGET_MIME]: { model_id: "m1", version_major: 2, version_minor: 1 } } : {}),
    "text/plain": "Shop — Running",
    "text/html": `<div class="anvia-live-slot anvia-key-${key} tex2jax_ignore mathjax_ignore"><div class="anvia-static-transcript">…</div></div>`,
  },
  metadata: {},
});

function notebookWith(...cells: Output[][]) {
  const lists = cells.map((outputs) => new FakeOutputs(outputs));
  const cellList = { length: lists.length, get: (i: number) => ({ outputs: lists[i] }) };
  return { lists, manager: { context: { model: { cells: cellList } } } };
}

describe("makeOutputsStatic", () => {
  it("drops the widget mimetype of this widget's outputs only, keeping the copy", () => {
    const other = bundle("someone-else");
    const prefix = bundle(`${KEY}0`); // a key that only starts like this one
    const plain = { output_type: "stream", data: {}, metadata: {} };
    const { lists, manager } = notebookWith([plain, bundle(KEY), prefix], [other, bundle(KEY)]);
    expect(makeOutputsStatic({ widget_manager: manager }, KEY)).toBe(2);
    for (const list of lists) {
      const own = list.items[1]!;
      expect(Object.keys(own.data).sort()).toEqual(["text/html", "text/plain"]);
      expect(own.data["text/html"]).toContain(`anvia-key-${KEY}`);
      expect(own.output_type).toBe("display_data");
    }
    expect(lists[1]!.items[0]).toBe(other); // another widget's output is left alone
    expect(lists[0]!.items[2]).toBe(prefix);
    expect(makeOutputsStatic({ widget_manager: manager }, KEY)).toBe(0); // nothing left to do
  });

  it("does nothing where the manager has no notebook (VS Code, Colab, a console)", () => {
    expect(makeOutputsStatic({ widget_manager: { kernel: {} } }, KEY)).toBe(0);
    expect(makeOutputsStatic({}, KEY)).toBe(0);
    expect(makeOutputsStatic({ widget_manager: { context: { model: { cells: null } } } }, KEY)).toBe(0);
  });

  it("runs the moment the notebook is about to be saved, while the model lives", () => {
    // The kernel's update of a live output (a Studio's copy refreshed at the end of a run) brings
    // the widget mimetype back; the page draws its new view later. A save before then must not
    // keep it: the document context says "started" just before it reads the notebook.
    const { lists, manager } = notebookWith([bundle(KEY, false)]);
    const slots = new Set<(sender: unknown, state: unknown) => void>();
    const saveState = {
      connect: (slot: (sender: unknown, state: unknown) => void) => slots.add(slot),
      disconnect: (slot: (sender: unknown, state: unknown) => void) => slots.delete(slot),
    };
    Object.assign(manager.context, { saveState });
    const save = (state: string) => {
      for (const slot of [...slots]) slot(manager.context, state);
      return structuredClone(lists[0]!.items[0]!);
    };
    const model = new FakeModel({ _anvia_key: KEY }) as FakeModel & { widget_manager: unknown };
    model.widget_manager = manager;
    const dispose = widget.initialize({ model }); // no view drawn: the output is not touched
    lists[0]!.items[0] = bundle(KEY); // the kernel's update, not drawn yet
    expect(WIDGET_MIME in save("completed").data).toBe(true); // only a save starting counts
    const saved = save("started");
    expect(Object.keys(saved.data).sort()).toEqual(["text/html", "text/plain"]);
    expect(saved.data["text/html"]).toContain(`anvia-key-${KEY}`);
    dispose(); // the model is gone: its outputs are left as they are
    expect(slots.size).toBe(0);
    lists[0]!.items[0] = bundle(KEY);
    expect(WIDGET_MIME in save("started").data).toBe(true);
  });

  it("runs after a view is drawn", async () => {
    const { lists, manager } = notebookWith([bundle(KEY)]);
    const model = new FakeModel({ _anvia_key: KEY }) as FakeModel & { widget_manager: unknown };
    model.widget_manager = manager;
    const disposers = [widget.initialize({ model })];
    model.kernel(snapshot([], status("running")));
    const el = document.createElement("div");
    document.body.appendChild(el);
    disposers.push(widget.render({ model, el }));
    expect(WIDGET_MIME in lists[0]!.items[0]!.data).toBe(true); // not while the page draws it
    await new Promise((r) => setTimeout(r, 5));
    expect(WIDGET_MIME in lists[0]!.items[0]!.data).toBe(false);
    disposers.reverse().forEach((d) => d());
  });
});
