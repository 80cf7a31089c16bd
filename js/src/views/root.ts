// Assemble one view of a session into `el`: the transcript view, or the Studio when mode is "studio".
// Once the kernel stopped, every control that would talk to it is turned off here, for all the
// parts at once (and for what they redraw later); controls that only change what the view shows
// (Show more, Jump to latest) keep working.
import { ancestors, h, nothingFocused } from "../dom";
import { schedule } from "../frame";
import type { Session, SessionEvent } from "../session";
import { evalsView } from "./evals";
import { inspectView } from "./inspect";
import { statusView } from "./status";
import { steerBox } from "./steer";
import { CARRIES_FOCUS, studioControls } from "./studio";
import { MOVED_EVENT, transcriptView } from "./transcript";

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
export function keepShortcutsOut(root: HTMLElement, session?: Session): () => void {
  const SUPPRESS = "data-lm-suppress-shortcuts";
  root.setAttribute(SUPPRESS, "true");
  let focused: HTMLElement | null = null;
  /** The focus is in this view, or left it for nothing (the control went away). */
  let inside = false;
  /** The control that last had the focus here. */
  let last: HTMLElement | null = null;
  /** Where the view sat in the page when it last had focus (its ancestors, nearest first). */
  let place: Element[] = [];
  const roots = session === undefined ? undefined : rootsOf(session);
  roots?.add(root);
  /** Once the browser has settled focus: if `left` went away or was turned off and nothing
   * has focus, the transcript takes it (a click elsewhere keeps its focus: `left` is still
   * there). */
  const refocusAfter = (left: HTMLElement): void => {
    setTimeout(() => {
      if (shown(left) && !left.matches(":disabled, [hidden]")) {
        inside = root.contains(document.activeElement);
        return;
      }
      if (!nothingFocused()) return;
      if (shown(root)) root.querySelector<HTMLElement>(".anvia-transcript")?.focus({ preventScroll: true });
      else handOver();
    }, 0);
  };
  /** The whole view was taken out with the focus in it (the kernel redrew the cell's output,
   * after a decision made with the keyboard, say): the view of the same session drawn in its
   * place takes the focus, in its transcript, once it is in the page (it may come a little
   * later). The Studio's own controls carry their focus themselves (views/studio.ts). */
  const handOver = (until = Date.now() + WAIT_FOR_REDRAW_MS): void => {
    if (roots === undefined || !nothingFocused() || last?.hasAttribute(CARRIES_FOCUS)) return;
    const home = place.find((e) => e.isConnected);
    const next = [...roots].reverse().find((r) => r !== root && r.isConnected && (!home || home.contains(r)));
    if (next) next.querySelector<HTMLElement>(".anvia-transcript")?.focus({ preventScroll: true });
    else if (Date.now() < until) schedule(root, () => handOver(until));
  };
  // Moved to the slot of an output drawn again (views/slots.ts): moving it took the focus away.
  root.addEventListener(MOVED_EVENT, (ev) => {
    if (ev.target !== root || !inside || !nothingFocused()) return;
    const back = last !== null && root.contains(last) && shown(last) ? last : root.querySelector<HTMLElement>(".anvia-transcript");
    back?.focus({ preventScroll: true });
  });
  // JupyterLab, told of a key pressed in a cell, cancels a line break typed before that key is
  // let go (its `beforeinput`; Shift is held down while Enter is pressed): Enter and Shift in
  // the widget's text boxes stop here, past the box's own handler (Enter sends, Shift+Enter is
  // a new line; the editor of arguments takes both as new lines). Other keys, Escape and the
  // shortcuts with Ctrl, Alt or Cmd, still reach the notebook.
  root.addEventListener("keydown", (ev) => {
    if (!(ev.target instanceof HTMLTextAreaElement)) return;
    if (ev.key === "Shift" || (ev.key === "Enter" && !ev.ctrlKey && !ev.metaKey && !ev.altKey)) {
      ev.stopPropagation();
    }
  });
  root.addEventListener("focusin", (ev) => {
    const target = ev.target;
    if (!(target instanceof HTMLElement)) return;
    if (!target.hasAttribute(SUPPRESS)) target.setAttribute(SUPPRESS, "true");
    focused = last = target;
    inside = true;
    place = ancestors(root);
  });
  root.addEventListener("focusout", (ev) => {
    if (!(ev.target instanceof HTMLElement)) return;
    if (ev.relatedTarget === null) refocusAfter(ev.target);
    else inside = ev.relatedTarget instanceof Node && root.contains(ev.relatedTarget);
  });
  // (a focused element taken out of the page may leave without a focusout)
  const watcher = new MutationObserver(() => {
    if (focused === null || focused.isConnected) return;
    refocusAfter(focused);
    focused = null;
  });
  watcher.observe(root, { childList: true, subtree: true });
  return () => {
    watcher.disconnect();
    roots?.delete(root);
    // (taken down with the focus in it, which may not have said so: a control turned off while
    // focused keeps the focus without a word in some browsers)
    if (inside) setTimeout(() => handOver(), 0);
  };
}

/** How long a view taken out with the focus waits for the one drawn in its place (ms): the page
 * draws it as soon as it has the kernel's message, later on a busy machine. */
const WAIT_FOR_REDRAW_MS = 5000;
const rootsBySession = new WeakMap<Session, Set<HTMLElement>>();

function rootsOf(session: Session): Set<HTMLElement> {
  let roots = rootsBySession.get(session);
  if (roots === undefined) {
    roots = new Set();
    rootsBySession.set(session, roots);
  }
  return roots;
}

/** Whether `el` is in the page and drawn: a view being replaced may be hidden first (the page
 * blurs its focused control then), and taken out a moment later. */
function shown(el: HTMLElement): boolean {
  return el.isConnected && (typeof el.checkVisibility !== "function" || el.checkVisibility());
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
  const stopKeeping = keepShortcutsOut(root, session);
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
