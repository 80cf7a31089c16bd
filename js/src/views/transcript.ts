// The transcript list of one view: keyed entry views updated incrementally from store events,
// pinned to the bottom unless the user scrolled away (then a "Jump to latest" button).
// Deliberately not a live region: status changes are announced by the status view.
// A view drawn from a long transcript builds its newest entries at once and older ones when they
// come near the viewport or the page is idle (a plain-text stand-in holds their place meanwhile).
import { button, h } from "../dom";
import { schedule } from "../frame";
import { type Entry, TOOL_STATUS_LABELS } from "../protocol";
import type { Session, SessionEvent } from "../session";
import { type EntryView, entryView } from "./entries";
import { waitsForSomeone } from "./interaction";

export interface TranscriptView {
  el: HTMLElement;
  dispose(): void;
}

/** How close to the bottom (px) still counts as "at the bottom". */
const PIN_SLACK = 32;
/** Entries a fresh view builds at once (the newest); older ones are built lazily. */
export const EAGER_ENTRIES = 50;
/** How long one idle slice may spend building older entries (ms). */
const SLICE_MS = 8;

interface Slot {
  kind: Entry["kind"];
  /** The entry's view; null while a stand-in holds its place. */
  view: EntryView | null;
  el: HTMLElement;
}

const standInText = (entry: Entry): string =>
  entry.kind === "tool" ? `${entry.tool_name} · ${TOOL_STATUS_LABELS[entry.status]}` : entry.text;

/** The cheap stand-in of an entry not built yet: its plain text, in the entry's box. */
function standIn(entry: Entry): HTMLElement {
  return h("div", { class: `anvia-entry anvia-entry-${entry.kind} anvia-entry-pending` }, standInText(entry));
}

type IdleHandle = { cancel(): void };

/** Run `fn` when the page is idle; `fn` works while `timeLeft()` (at most SLICE_MS: an idle
 * period may last 50 ms, and a click must not wait that long). */
function whenIdle(fn: (timeLeft: () => boolean) => void): IdleHandle {
  if (typeof requestIdleCallback === "function") {
    const id = requestIdleCallback((d) => {
      const end = performance.now() + SLICE_MS;
      fn(() => d.timeRemaining() > 1 && performance.now() < end);
    });
    return { cancel: () => cancelIdleCallback(id) };
  }
  const id = setTimeout(() => {
    const end = performance.now() + SLICE_MS;
    fn(() => performance.now() < end);
  }, 16);
  return { cancel: () => clearTimeout(id) };
}

export function transcriptView(session: Session): TranscriptView {
  const list = h("div", { class: "anvia-transcript", tabindex: 0, "aria-label": "Transcript" });
  const jump = button("Jump to latest", () => {
    pinned = true;
    scrollToBottom();
  }, { class: "anvia-button anvia-jump", hidden: true });
  const el = h("div", { class: "anvia-transcript-wrap" }, list, jump);
  const views = new Map<string, Slot>();
  /** Ids of stand-ins, oldest first (idle time builds the newest first). */
  let pending: string[] = [];
  let idle: IdleHandle | null = null;
  const observer =
    typeof IntersectionObserver === "function"
      ? new IntersectionObserver(
          (changes) => {
            for (const change of changes) {
              const id = (change.target as HTMLElement & { anviaId?: string }).anviaId;
              if (change.isIntersecting && id !== undefined) build(id);
            }
          },
          { rootMargin: "800px 0px" },
        )
      : null;
  let pinned = true;
  const scrollKey = {};

  function scrollToBottom(): void {
    list.scrollTop = list.scrollHeight;
    jump.hidden = true;
  }
  function contentChanged(): void {
    list.classList.toggle("anvia-long", views.size > EAGER_ENTRIES);
    schedule(scrollKey, () => {
      if (pinned) scrollToBottom();
      else jump.hidden = false;
    });
  }
  list.addEventListener("scroll", () => {
    pinned = list.scrollHeight - list.scrollTop - list.clientHeight <= PIN_SLACK;
    if (pinned) jump.hidden = true;
  });

  function create(entry: Entry): Slot {
    const view = entryView(session, entry);
    const slot = { kind: entry.kind, view, el: view.el };
    views.set(entry.id, slot);
    return slot;
  }

  function createLater(entry: Entry): Slot {
    const el = standIn(entry);
    (el as HTMLElement & { anviaId?: string }).anviaId = entry.id;
    const slot = { kind: entry.kind, view: null, el };
    views.set(entry.id, slot);
    pending.push(entry.id);
    observer?.observe(el);
    return slot;
  }

  /** Build the entry `id` now if a stand-in holds its place; its slot. */
  function build(id: string): Slot | undefined {
    const slot = views.get(id);
    const entry = session.store.get(id);
    if (!slot || slot.view || !entry) return slot;
    observer?.unobserve(slot.el);
    const view = entryView(session, entry);
    slot.el.replaceWith(view.el);
    slot.view = view;
    slot.el = view.el;
    return slot;
  }

  function buildWhenIdle(): void {
    if (idle || pending.length === 0) return;
    idle = whenIdle((timeLeft) => {
      idle = null;
      while (pending.length > 0 && timeLeft()) build(pending.pop()!);
      pending = pending.filter((id) => views.get(id)?.view === null);
      buildWhenIdle();
    });
  }

  function drop(id: string, slot: Slot): void {
    if (slot.view) slot.view.dispose();
    else observer?.unobserve(slot.el);
    slot.el.remove();
    views.delete(id);
  }

  /** Rebuild from the store, reusing the views of entries that are still there. */
  function reconcile(): void {
    const keep = new Set<string>();
    const entries = session.store.entries;
    const eagerFrom = entries.length - EAGER_ENTRIES;
    let ref: ChildNode | null = list.firstChild;
    entries.forEach((entry, index) => {
      keep.add(entry.id);
      let slot = views.get(entry.id);
      if (slot && slot.kind === entry.kind) {
        if (slot.view) slot.view.update(entry);
        else slot.el.textContent = standInText(entry);
      } else {
        if (slot) drop(entry.id, slot);
        // An entry where an approval or a question waits is built at once, however old.
        slot = index < eagerFrom && !waitsForSomeone(entry) ? createLater(entry) : create(entry);
      }
      if (slot.el === ref) ref = ref.nextSibling;
      else list.insertBefore(slot.el, ref);
    });
    for (const [id, slot] of views) {
      if (!keep.has(id)) drop(id, slot);
    }
    pending = pending.filter((id) => views.get(id)?.view === null);
    buildWhenIdle();
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
      case "append": {
        const slot = views.get(ev.entry.id);
        if (slot?.view) slot.view.append(ev.field, ev.text);
        else build(ev.entry.id); // built from the store, which has the text already
        contentChanged();
        break;
      }
      case "patch": {
        const slot = views.get(ev.entry.id);
        if (slot?.view) slot.view.update(ev.entry);
        else build(ev.entry.id);
        contentChanged();
        break;
      }
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
      observer?.disconnect();
      idle?.cancel();
      for (const { view } of views.values()) view?.dispose();
      views.clear();
    },
  };
}
