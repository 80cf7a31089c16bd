// The transcript list of one view: keyed entry views updated incrementally from store events,
// pinned to the bottom unless the user scrolled away (then a "Jump to latest" button).
// Deliberately not a live region: status changes are announced by the status view.
// A view drawn from a long transcript builds its newest entries at once and older ones when they
// come near the viewport or the page is idle (a plain-text stand-in holds their place meanwhile).
// A sub-agent's entries (in their tool call's block, at any depth) are built with the top-level
// entry they are inside of: a stand-in holds the place of the whole block. A top-level tool call
// built folded (it is over) has its sub-agents' entries built when it opens, when one of them
// changes or waits for someone, or when the page is idle: they are out of sight until then.
// What comes near the viewport is found when the list scrolls (a binary search over the stand-ins,
// which are in document order), not by observing every stand-in: an IntersectionObserver with a
// thousand targets costs every frame until the last one is built.
import { button, h } from "../dom";
import { cancelScheduled, type IdleHandle, schedule, whenIdle } from "../frame";
import { type Entry, TOOL_STATUS_LABELS } from "../protocol";
import type { Session, SessionEvent } from "../session";
import { type EntryView, entryView } from "./entries";
import { waitsForSomeone } from "./interaction";

export interface TranscriptView {
  el: HTMLElement;
  dispose(): void;
}

/** The event slots.ts sends a transcript list whose view it moved to another place of the page. */
export const MOVED_EVENT = "anvia-moved";
/** How close to the bottom (px) still counts as "at the bottom". */
const PIN_SLACK = 32;
/** Entries a fresh view builds at once (the newest: more than fill the list's height); older
 * ones are built lazily. */
export const EAGER_ENTRIES = 24;
/** Stand-ins this close (px) above or below the visible part of the list are built. */
const NEAR = 800;
/** Keys that scroll a focused list up. */
const UP_KEYS = new Set(["Home", "PageUp", "ArrowUp"]);

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

export function transcriptView(session: Session): TranscriptView {
  // A named region (a landmark a screen reader lists and announces by its name), not a "log":
  // that would make it a live region, reading out every streamed token.
  const list = h("div", { class: "anvia-transcript", role: "region", tabindex: 0, "aria-label": "Transcript" });
  const jump = button("Jump to latest", () => {
    pinned = true;
    leaving = false;
    scrollToBottom();
  }, { class: "anvia-button anvia-jump", hidden: true });
  const el = h("div", { class: "anvia-transcript-wrap" }, list, jump);
  const views = new Map<string, Slot>();
  /** Ids of stand-ins in document order, oldest first (idle time builds the newest first). */
  let pending: string[] = [];
  /** Top-level entries built folded whose sub-agents' entries are not built yet, by element. */
  const folded = new Map<string, HTMLElement>();
  const foldedIds = new WeakMap<Element, string>();
  let idle: IdleHandle | null = null;
  let pinned = true;
  /** A key moved the list up and its scroll has not left the bottom yet. */
  let leaving = false;
  const scrollKey = {};
  const nearKey = {};

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
  // Where the list was scrolled to, as the first entry in view and how far below the list's
  // top it starts: a view moved to another place of the page (its output was redrawn,
  // slots.ts) loses its scroll position with its layout, and gets it back from this.
  let anchor: { el: Element; offset: number } | null = null;
  const anchorKey = {};
  function keepAnchor(): void {
    const box = list.getBoundingClientRect();
    if (box.height === 0) return; // not laid out: keep the last place
    const children = list.children;
    let lo = 0;
    let hi = children.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (children[mid]!.getBoundingClientRect().bottom <= box.top) lo = mid + 1;
      else hi = mid;
    }
    const el = children[lo];
    anchor = el ? { el, offset: el.getBoundingClientRect().top - box.top } : null;
  }
  // Moved with its view (slots.ts says so): back to the bottom, or to the entry it showed.
  list.addEventListener(MOVED_EVENT, () => {
    if (pinned) scrollToBottom();
    else if (anchor && anchor.el.parentElement === list) {
      const moved = anchor.el.getBoundingClientRect().top - list.getBoundingClientRect().top - anchor.offset;
      if (Math.abs(moved) >= 1) list.scrollTop += moved;
    }
  });
  // A key that scrolls the focused list up unpins it at once, and it stays unpinned until the
  // scroll has left the bottom: a smooth scroll's first steps are still within PIN_SLACK of it,
  // and content built meanwhile (older entries coming near) would scroll it back down. (Keys
  // pressed in a control inside the list are that control's.)
  list.addEventListener("keydown", (ev) => {
    if (ev.target !== list || list.scrollTop <= 0) return; // (nothing above: no scroll comes)
    if (UP_KEYS.has(ev.key) || (ev.key === " " && ev.shiftKey)) {
      pinned = false;
      leaving = true;
    }
  });
  list.addEventListener("scroll", () => {
    if (list.clientHeight > 0) schedule(anchorKey, keepAnchor);
    const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight <= PIN_SLACK;
    if (leaving && !atBottom) leaving = false;
    pinned = atBottom && !leaving;
    if (pinned) jump.hidden = true;
    if (pending.length > 0) schedule(nearKey, buildNear);
  }, { passive: true });
  // A folded tool call opened (by a person, or by its view): its sub-agents' entries are built.
  // ("toggle" does not bubble: it is caught on its way down.)
  list.addEventListener("toggle", (ev) => {
    const id = ev.target instanceof Element ? foldedIds.get(ev.target) : undefined;
    if (id !== undefined && (ev.target as HTMLDetailsElement).open) unfold(id);
  }, true);

  /** Build the stand-ins within NEAR px of the visible part of the list. */
  function buildNear(): void {
    pending = pending.filter((id) => views.get(id)?.view === null);
    if (pending.length === 0 || !list.isConnected) return;
    const box = list.getBoundingClientRect();
    if (box.width === 0 && box.height === 0) return; // not laid out (hidden): nothing is near
    const top = box.top - NEAR;
    const bottom = box.bottom + NEAR;
    const rect = (i: number): DOMRect => views.get(pending[i]!)!.el.getBoundingClientRect();
    // The first stand-in that ends below `top` (stand-ins are in document order).
    let lo = 0;
    let hi = pending.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (rect(mid).bottom < top) lo = mid + 1;
      else hi = mid;
    }
    const near: string[] = [];
    for (let i = lo; i < pending.length && rect(i).top <= bottom; i++) near.push(pending[i]!);
    for (const id of near) build(id);
  }

  function create(entry: Entry): Slot {
    const view = entryView(session, entry);
    const slot = { kind: entry.kind, view, el: view.el };
    views.set(entry.id, slot);
    foldIfClosed(entry, view);
    return slot;
  }

  /** A top-level call that runs a sub-agent, built folded (it is over): its block is out of
   * sight, and its entries wait (see `unfold`). True when so. */
  function foldIfClosed(entry: Entry, view: EntryView): boolean {
    const closed = view.el instanceof HTMLDetailsElement && !view.el.open;
    if (entry.parent || entry.kind !== "tool" || !entry.sub_agent || !closed) return false;
    folded.set(entry.id, view.el);
    foldedIds.set(view.el, entry.id);
    return true;
  }

  /** Build the sub-agents' entries of the top-level entry `id` if it was built folded. */
  function unfold(id: string): void {
    const el = folded.get(id);
    if (el === undefined) return;
    folded.delete(id);
    foldedIds.delete(el);
    buildNested(id);
  }

  /** Build the top-level entry `id` and the sub-agents' entries inside it, whatever holds
   * them back (a stand-in, a folded tool call). */
  function reveal(id: string): void {
    build(id);
    unfold(id);
  }

  function createLater(entry: Entry): Slot {
    const slot = { kind: entry.kind, view: null, el: standIn(entry) };
    views.set(entry.id, slot);
    return slot;
  }

  /** Build the entry `id` now if a stand-in holds its place (and the sub-agents' entries inside
   * it); its slot. */
  function build(id: string): Slot | undefined {
    const slot = views.get(id);
    const entry = session.store.get(id);
    if (!slot || slot.view || !entry) return slot;
    const view = entryView(session, entry);
    slot.el.replaceWith(view.el);
    slot.view = view;
    slot.el = view.el;
    if (!entry.parent && !foldIfClosed(entry, view)) buildNested(id);
    return slot;
  }

  /** The top-level entry that `entry` (a sub-agent's, at any depth) is inside of. */
  function topOf(entry: Entry): Entry {
    let top = entry;
    while (top.parent) {
      const up = session.store.get(top.parent);
      if (!up || up === top) break;
      top = up;
    }
    return top;
  }

  /** A sub-agent's entry whose top-level entry is a stand-in or folded: it is built with it. */
  function deferred(entry: Entry): boolean {
    if (!entry.parent) return false;
    const top = topOf(entry).id;
    const slot = views.get(top);
    return slot !== undefined && (slot.view === null || folded.has(top));
  }

  /** Build the sub-agents' entries inside the top-level entry `id`, just built, in order. */
  function buildNested(id: string): void {
    for (const entry of session.store.entries) {
      if (!entry.parent || views.has(entry.id) || topOf(entry).id !== id) continue;
      containerOf(entry).appendChild(create(entry).el);
    }
  }

  /** Where entry `entry` goes: a sub-agent's entry inside its tool call's view (built now if a
   * stand-in held its place), any other in the list. */
  function containerOf(entry: Entry): HTMLElement {
    if (!entry.parent) return list;
    const parent = views.get(entry.parent) ?? null;
    const built = parent && !parent.view ? build(entry.parent) : parent;
    return built?.view?.nested ?? list;
  }

  function buildWhenIdle(): void {
    if (idle || (pending.length === 0 && folded.size === 0)) return;
    idle = whenIdle((timeLeft) => {
      idle = null;
      while (pending.length > 0 && timeLeft()) build(pending.pop()!);
      pending = pending.filter((id) => views.get(id)?.view === null);
      if (pending.length === 0) {
        for (const id of [...folded.keys()].reverse()) {
          if (!timeLeft()) break;
          unfold(id);
        }
      }
      buildWhenIdle();
    });
  }

  function drop(id: string, slot: Slot): void {
    slot.view?.dispose();
    slot.el.remove();
    views.delete(id);
    folded.delete(id);
  }

  /** Rebuild from the store, reusing the views of entries that are still there. */
  function reconcile(): void {
    const keep = new Set<string>();
    const entries = session.store.entries;
    const eagerFrom = entries.length - EAGER_ENTRIES;
    let ref: ChildNode | null = list.firstChild;
    entries.forEach((entry, index) => {
      keep.add(entry.id);
      if (entry.parent) {
        // A sub-agent's entry: in its tool call's view, in order; built with its top-level
        // entry (at once when an approval or a question waits in it).
        if (deferred(entry)) {
          if (!waitsForSomeone(entry)) {
            const old = views.get(entry.id);
            if (old) drop(entry.id, old);
            return;
          }
          reveal(topOf(entry).id);
        }
        let nestedSlot = views.get(entry.id);
        if (nestedSlot && nestedSlot.kind === entry.kind && nestedSlot.view) nestedSlot.view.update(entry);
        else {
          if (nestedSlot) drop(entry.id, nestedSlot);
          nestedSlot = create(entry);
        }
        const container = containerOf(entry);
        if (nestedSlot.el.parentElement !== container || container.lastElementChild !== nestedSlot.el) {
          container.appendChild(nestedSlot.el);
        }
        return;
      }
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
    // In document order, which the search for stand-ins near the viewport relies on.
    pending = entries.filter((entry) => views.get(entry.id)?.view === null).map((entry) => entry.id);
    buildWhenIdle();
    contentChanged();
    // After the frame's scroll to the bottom: stand-ins in view (a list taller than the newest
    // entries) are built before the page is idle.
    if (pending.length > 0) schedule(nearKey, buildNear);
  }

  /** The conversation the views were drawn for: another one (a Studio's agent picked) has
   * entries of its own, even where their ids are the same. */
  let shown = session.conversation;
  function onEvent(ev: SessionEvent): void {
    switch (ev.type) {
      case "reset":
        if (session.conversation !== shown) {
          shown = session.conversation;
          for (const [id, slot] of [...views]) drop(id, slot);
        }
        reconcile();
        break;
      case "studio": {
        // The agents' names came (or changed): the replies say whose they are.
        const label = session.replyLabel();
        for (const role of list.querySelectorAll(".anvia-entry-assistant > .anvia-role")) {
          if (role.textContent !== label) role.textContent = label;
        }
        break;
      }
      case "add": {
        // Inside a top-level entry that a stand-in holds: that one is built now, with it.
        if (deferred(ev.entry)) reveal(topOf(ev.entry).id);
        if (!views.has(ev.entry.id)) containerOf(ev.entry).appendChild(create(ev.entry).el);
        contentChanged();
        break;
      }
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
      cancelScheduled(nearKey);
      cancelScheduled(anchorKey);
      idle?.cancel();
      for (const { view } of views.values()) view?.dispose();
      views.clear();
      folded.clear();
    },
  };
}
