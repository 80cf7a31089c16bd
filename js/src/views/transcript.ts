// The transcript list of one view: keyed entry views updated incrementally from store events,
// pinned to the bottom unless the user scrolled away (then a "Jump to latest" button).
// Deliberately not a live region: status changes are announced by the status view.
import { button, h } from "../dom";
import { schedule } from "../frame";
import type { Entry } from "../protocol";
import type { Session, SessionEvent } from "../session";
import { type EntryView, entryView } from "./entries";

export interface TranscriptView {
  el: HTMLElement;
  dispose(): void;
}

/** How close to the bottom (px) still counts as "at the bottom". */
const PIN_SLACK = 32;

export function transcriptView(session: Session): TranscriptView {
  const list = h("div", { class: "anvia-transcript", tabindex: 0, "aria-label": "Transcript" });
  const jump = button("Jump to latest", () => {
    pinned = true;
    scrollToBottom();
  }, { class: "anvia-button anvia-jump", hidden: true });
  const el = h("div", { class: "anvia-transcript-wrap" }, list, jump);
  const views = new Map<string, { kind: Entry["kind"]; view: EntryView }>();
  let pinned = true;
  const scrollKey = {};

  function scrollToBottom(): void {
    list.scrollTop = list.scrollHeight;
    jump.hidden = true;
  }
  function contentChanged(): void {
    schedule(scrollKey, () => {
      if (pinned) scrollToBottom();
      else jump.hidden = false;
    });
  }
  list.addEventListener("scroll", () => {
    pinned = list.scrollHeight - list.scrollTop - list.clientHeight <= PIN_SLACK;
    if (pinned) jump.hidden = true;
  });

  function create(entry: Entry): EntryView {
    const view = entryView(session, entry);
    views.set(entry.id, { kind: entry.kind, view });
    return view;
  }

  /** Rebuild from the store, reusing the views of entries that are still there. */
  function reconcile(): void {
    const keep = new Set<string>();
    let ref: ChildNode | null = list.firstChild;
    for (const entry of session.store.entries) {
      keep.add(entry.id);
      const known = views.get(entry.id);
      let view: EntryView;
      if (known && known.kind === entry.kind) {
        view = known.view;
        view.update(entry);
      } else {
        known?.view.dispose();
        known?.view.el.remove();
        view = create(entry);
      }
      if (view.el === ref) ref = ref.nextSibling;
      else list.insertBefore(view.el, ref);
    }
    for (const [id, { view }] of views) {
      if (keep.has(id)) continue;
      view.dispose();
      view.el.remove();
      views.delete(id);
    }
    contentChanged();
  }

  function onEvent(ev: SessionEvent): void {
    switch (ev.type) {
      case "reset":
        reconcile();
        break;
      case "add":
        list.appendChild(create(ev.entry).el);
        contentChanged();
        break;
      case "append":
        views.get(ev.entry.id)?.view.append(ev.field, ev.text);
        contentChanged();
        break;
      case "patch":
        views.get(ev.entry.id)?.view.update(ev.entry);
        contentChanged();
        break;
      default:
        break;
    }
  }

  reconcile();
  const unsubscribe = session.subscribe(onEvent);
  return {
    el,
    dispose() {
      unsubscribe();
      for (const { view } of views.values()) view.dispose();
      views.clear();
    },
  };
}
