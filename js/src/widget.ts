// anywidget entry point. State lives per model (created in `initialize`, which registers the
// custom-message listener and asks the kernel for a snapshot); every view renders that state.
import { type WidgetModel, Session } from "./session";
import { mountView } from "./views/root";

const sessions = new WeakMap<WidgetModel, Session>();

function sessionFor(model: WidgetModel): Session {
  let s = sessions.get(model);
  if (!s) {
    s = new Session(model);
    sessions.set(model, s);
  }
  return s;
}

export default {
  initialize({ model }: { model: WidgetModel }): () => void {
    const session = sessionFor(model);
    return () => {
      session.dispose();
      sessions.delete(model);
    };
  },
  render({ model, el }: { model: WidgetModel; el: HTMLElement }): () => void {
    return mountView(sessionFor(model), el);
  },
};
