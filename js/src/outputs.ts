// Where the widget manager exposes the notebook document (JupyterLab, Notebook 7:
// `widget_manager.context.model`), the cell outputs of a live view are made static in the
// document itself as soon as the view is drawn: the widget mimetype is dropped, which leaves the
// kernel's static copy in its slot, and this page covers the slot with the same live view
// (slots.ts). A notebook saved at any time (mid-run, or with a Studio, which never ends) then
// shows that copy when reopened without the kernel, instead of JupyterLab's "Error displaying
// widget: model not found": JupyterLab prefers the widget mimetype to the HTML copy, and reports
// the missing model without falling back.
//
// That happens after the page has drawn the view, which takes a while: the kernel's update of a
// live output (a Studio's copy refreshed at the end of a run) brings the widget mimetype back,
// and the page draws the new view asynchronously. So the document is also made static the moment
// it is about to be saved (the document context's `saveState` "started", emitted just before the
// notebook is read for saving): a notebook saved at any time never holds the widget mimetype.
//
// Elsewhere (VS Code, Colab) the output stays as the kernel sent it; a finished run's output is
// replaced by its static copy by the kernel itself.
import { isSignal, read } from "./kernel";

export const WIDGET_MIME = "application/vnd.jupyter.widget-view+json";

type Json = Record<string, unknown>;

interface OutputList {
  readonly length: number;
  get(index: number): unknown;
  set(index: number, value: Json): void;
}

/** The notebook's code cell output lists, if the manager exposes the notebook. */
function outputLists(model: unknown): OutputList[] {
  const notebook = read(read(read(model, "widget_manager"), "context"), "model");
  const cells = read(notebook, "cells") as { length?: unknown; get?: unknown } | undefined;
  if (!cells || typeof cells.length !== "number" || typeof cells.get !== "function") return [];
  const lists: OutputList[] = [];
  for (let i = 0; i < cells.length; i++) {
    let cell: unknown;
    try {
      cell = (cells.get as (i: number) => unknown).call(cells, i);
    } catch {
      continue;
    }
    const outputs = read(cell, "outputs") as Partial<OutputList> | undefined;
    if (outputs && typeof outputs.length === "number" && typeof outputs.get === "function" && typeof outputs.set === "function") {
      lists.push(outputs as OutputList);
    }
  }
  return lists;
}

/** Whether `data` is a bundle of this widget that also holds its static copy. */
function ownBundle(data: unknown, key: string): data is Json {
  if (!data || typeof data !== "object" || !(WIDGET_MIME in data)) return false;
  const html = (data as Json)["text/html"];
  const text = Array.isArray(html) ? html.join("") : html;
  return typeof text === "string" && (text.includes(`anvia-key-${key}"`) || text.includes(`anvia-key-${key} `));
}

/**
 * Drop the widget mimetype from the outputs of widget `key` that carry its static copy; returns
 * how many outputs changed. Nothing happens without a notebook document to change.
 */
export function makeOutputsStatic(model: unknown, key: string): number {
  if (!key) return 0;
  let changed = 0;
  for (const outputs of outputLists(model)) {
    for (let i = 0; i < outputs.length; i++) {
      try {
        const item = outputs.get(i) as { data?: unknown; toJSON?: () => Json } | undefined;
        if (!item || !ownBundle(item.data, key) || typeof item.toJSON !== "function") continue;
        const json = item.toJSON();
        const { [WIDGET_MIME]: _widget, ...data } = (json.data ?? item.data) as Json;
        outputs.set(i, { ...json, data });
        changed++;
      } catch (err) {
        console.warn("anvia: could not keep a static copy in the notebook", err);
      }
    }
  }
  return changed;
}

/**
 * Make the outputs of widget `key` static each time the notebook is about to be saved (see the
 * top of this file); returns the function that stops it. Nothing happens without a document
 * context that says when it saves.
 */
export function keepOutputsStaticOnSave(model: unknown, key: string): () => void {
  const saveState = read(read(read(model, "widget_manager"), "context"), "saveState");
  if (!key || !isSignal(saveState)) return () => {};
  const onSaveState = (_context: unknown, state: unknown): void => {
    if (state === "started") makeOutputsStatic(model, key);
  };
  saveState.connect(onSaveState);
  return () => {
    saveState.disconnect(onSaveState);
  };
}
