// Assemble one view of a session into `el`: the transcript view, or the Studio when mode is "studio".
// Once the kernel stopped, every control that would talk to it is turned off here, for all the
// parts at once (and for what they redraw later); controls that only change what the view shows
// (Show more, Jump to latest) keep working.
import { h } from "../dom";
import type { Session, SessionEvent } from "../session";
import { evalsView } from "./evals";
import { inspectView } from "./inspect";
import { statusView } from "./status";
import { steerBox } from "./steer";
import { studioControls } from "./studio";
import { transcriptView } from "./transcript";

/** Controls that only change what this view shows: they keep working without a kernel. */
const VIEW_ONLY = ".anvia-fold-toggle, .anvia-jump, .anvia-view-only";
type Control = HTMLButtonElement | HTMLInputElement | HTMLTextAreaElement | HTMLSelectElement;

/** Turn off every control in `root` that talks to the kernel, now and whenever one is drawn or
 * turned back on; returns the function that stops watching. */
export function freezeControls(root: HTMLElement): () => void {
  const apply = (): void => {
    for (const control of root.querySelectorAll<Control>("button, input, textarea, select")) {
      if (!control.disabled && !control.matches(VIEW_ONLY)) control.disabled = true;
    }
  };
  apply();
  if (typeof MutationObserver !== "function") return () => {};
  const observer = new MutationObserver(apply);
  observer.observe(root, { subtree: true, childList: true, attributes: true, attributeFilter: ["disabled"] });
  return () => observer.disconnect();
}

export function mountView(session: Session, el: HTMLElement): () => void {
  if (session.mode === "evals") {
    // An evaluation report's view: its own header, table and case transcript (views/evals.ts).
    return mountRoot(session, el, "anvia-evals-mode", (root, title) => {
      const view = evalsView(session);
      root.append(title, view.el);
      return [view.dispose];
    });
  }
  const studio = session.mode === "studio";
  return mountRoot(session, el, studio ? "anvia-studio" : "anvia-transcript-mode", (root, title) => {
    const status = statusView(session);
    const transcript = transcriptView(session);
    // Inspect: its toggle in the status bar (before Stop), its panel under the transcript.
    const inspect = inspectView(session);
    status.el.insertBefore(inspect.button, status.el.querySelector(".anvia-stop"));
    const disposers = [status.dispose, transcript.dispose, inspect.dispose];
    if (studio) {
      const controls = studioControls(session);
      disposers.push(controls.dispose);
      root.append(status.banner, title, controls.header, transcript.el, inspect.el, controls.prompts, controls.composer, status.el, status.live);
    } else {
      // While the run goes, a message box under the transcript steers it (Enter sends).
      const box = steerBox(session);
      disposers.push(box.dispose);
      root.append(status.banner, title, transcript.el, inspect.el, box.el, status.el, status.live);
    }
    return disposers;
  });
}

/** Keys pressed in the widget stay in it: the notebook's shortcuts (`d d` deletes the cell,
 * the arrows move between cells) match a focused element of the widget itself (their selectors
 * end in `:focus`), so the attribute that turns them off goes on whatever takes focus, not only
 * on the root. And a control taken out of the page, turned off or hidden while focused (a decided
 * approval's buttons) hands focus to the transcript, not to the page, where the next key would act on the notebook.
 * Returns the function that stops watching. */
export function keepShortcutsOut(root: HTMLElement): () => void {
  const SUPPRESS = "data-lm-suppress-shortcuts";
  root.setAttribute(SUPPRESS, "true");
  let focused: HTMLElement | null = null;
  /** Once the browser has settled focus: if `left` went away or was turned off and nothing
   * has focus, the transcript takes it (a click elsewhere keeps its focus: `left` is still
   * there). */
  const refocusAfter = (left: HTMLElement): void => {
    setTimeout(() => {
      if (!root.isConnected || (left.isConnected && !left.matches(":disabled, [hidden]"))) return;
      const active = document.activeElement;
      if (active !== null && active !== document.body) return;
      root.querySelector<HTMLElement>(".anvia-transcript")?.focus({ preventScroll: true });
    }, 0);
  };
  root.addEventListener("focusin", (ev) => {
    const target = ev.target;
    if (!(target instanceof HTMLElement)) return;
    if (!target.hasAttribute(SUPPRESS)) target.setAttribute(SUPPRESS, "true");
    focused = target;
  });
  root.addEventListener("focusout", (ev) => {
    if (ev.target instanceof HTMLElement && ev.relatedTarget === null) refocusAfter(ev.target);
  });
  // (a focused element taken out of the page may leave without a focusout)
  const watcher = new MutationObserver(() => {
    if (focused === null || focused.isConnected) return;
    refocusAfter(focused);
    focused = null;
  });
  watcher.observe(root, { childList: true, subtree: true });
  return () => watcher.disconnect();
}

/** The root of one view in `el`, with the `title` trait (the agent's name, as text) that `build`
 * places among the parts it adds (it returns their disposers); once the kernel stopped, its
 * controls are turned off. Returns the function that takes the view down. */
function mountRoot(
  session: Session,
  el: HTMLElement,
  mode: string,
  build: (root: HTMLElement, title: HTMLElement) => (() => void)[],
): () => void {
  const root = h("div", { class: `anvia-root ${mode}` });
  const stopKeeping = keepShortcutsOut(root);
  const title = h("div", { class: "anvia-title" });
  const showTitle = (): void => {
    title.textContent = session.trait("title");
    title.hidden = !title.textContent;
  };
  showTitle();
  const disposers = [...build(root, title), stopKeeping];
  el.appendChild(root);
  let unfreeze: (() => void) | null = null;
  const onConnection = (ev: SessionEvent): void => {
    if (ev.type !== "connection" || !session.kernelStopped || unfreeze) return;
    root.classList.add("anvia-kernel-stopped");
    unfreeze = freezeControls(root);
  };
  onConnection({ type: "connection" });
  disposers.push(session.onTrait("title", showTitle), session.subscribe(onConnection), () => unfreeze?.());
  return () => {
    for (const d of disposers) d();
    root.remove();
  };
}
