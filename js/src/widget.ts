// anywidget entry point. State lives per model (created in `initialize`, which registers the
// custom-message listener and asks the kernel for a snapshot); every view renders that state.
import { keepOutputsStaticOnSave, makeOutputsStatic } from "./outputs";
import { type WidgetModel, Session } from "./session";
import { offerSession } from "./slots";
import { mountView } from "./views/root";

// anywidget gives `initialize` and each `render` a different proxy of the same model, so the
// one session of a model is found by its `_anvia_key` trait (unique per widget); a model without
// one (an older kernel) is keyed by the object itself.
const sessionsByKey = new Map<string, Session>();
const sessionsByModel = new WeakMap<WidgetModel, Session>();

function keyOf(model: WidgetModel): string {
  try {
    const key = model.get("_anvia_key");
    return typeof key === "string" ? key : "";
  } catch {
    return "";
  }
}

function sessionFor(model: WidgetModel): Session {
  const key = keyOf(model);
  let s = key ? sessionsByKey.get(key) : sessionsByModel.get(model);
  if (!s) {
    s = new Session(model);
    if (key) sessionsByKey.set(key, s);
    else sessionsByModel.set(model, s);
  }
  return s;
}

function forget(model: WidgetModel, session: Session): void {
  const key = keyOf(model);
  if (key && sessionsByKey.get(key) === session) sessionsByKey.delete(key);
  if (sessionsByModel.get(model) === session) sessionsByModel.delete(model);
}

export default {
  initialize({ model }: { model: WidgetModel }): () => void {
    const session = sessionFor(model);
    // A finished run's output is its static copy: while this model lives, it gets a live view.
    const withdraw = offerSession(keyOf(model), session);
    // JupyterLab, Notebook 7: whatever the page has drawn yet, a save keeps the static copy.
    const stopKeeping = keepOutputsStaticOnSave(model, keyOf(model));
    return () => {
      stopKeeping();
      withdraw();
      session.dispose();
      forget(model, session);
    };
  },
  render({ model, el }: { model: WidgetModel; el: HTMLElement }): () => void {
    const dispose = mountView(sessionFor(model), el);
    // JupyterLab, Notebook 7: the notebook keeps the static copy, covered by a live view
    // (outputs.ts). Later, not while the page is drawing this output.
    setTimeout(() => makeOutputsStatic(model, keyOf(model)), 0);
    return dispose;
  },
};
