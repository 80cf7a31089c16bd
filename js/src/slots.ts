// A finished run's cell output is a static copy of its transcript (what a saved notebook keeps:
// it reads well with no kernel and no widget, in JupyterLab, Notebook 7, VS Code, GitHub). The
// kernel wraps the copy in `<div class="anvia-live-slot anvia-key-KEY">`, KEY being the widget's
// `_anvia_key`. While that widget's model lives in this page, each such slot gets a live view of
// it in place of the copy (rendered markdown, folds: the view a person had before the run
// ended); where the model is gone (a reopened notebook, another page) nothing runs and the copy
// stays. An evaluation report's output works the same way, its copy being the report's table.
//
// One observer of the page finds the slots as they are drawn (the kernel's display update, a
// scrolled-in cell) and lets go of their views when they leave the page.
import type { Session } from "./session";
import { mountView } from "./views/root";
import { MOVED_EVENT } from "./views/transcript";

export const SLOT_CLASS = "anvia-live-slot";
const KEY_PREFIX = "anvia-key-";
/** The static copies a live view stands in for: a run's transcript, an evaluation report's table
 * (the HTML of `EvalReport._repr_html_`). */
const COPY_CLASSES = ["anvia-static-transcript", "anvia-eval-report"];
const COPY_SELECTOR = COPY_CLASSES.map((c) => `.${c}`).join(", ");

interface Covered {
  key: string;
  host: HTMLElement;
  /** The static copies taken out of the page while the live view stands in for them (so that
   * nothing finds the same words twice), put back when it goes. */
  copies: HTMLElement[];
  dispose: () => void;
}

const sessions = new Map<string, Session>();
/** One rule per offered widget hides its copies from the moment the page draws them (before
 * they are taken out): a long copy is never laid out, and never flashes. */
let rules: HTMLStyleElement | null = null;

function hideRules(): void {
  if (typeof document === "undefined") return;
  const keys = [...sessions.keys()].filter((k) => /^[A-Za-z0-9_-]+$/.test(k));
  if (keys.length === 0) {
    rules?.remove();
    rules = null;
    return;
  }
  if (rules === null || !rules.isConnected) {
    rules = document.createElement("style");
    (document.head ?? document.documentElement).appendChild(rules);
  }
  rules.textContent = keys
    .flatMap((k) => COPY_CLASSES.map((c) => `.${SLOT_CLASS}.${KEY_PREFIX}${k} > .${c} { display: none !important; }`))
    .join("\n");
}
const covered = new Map<HTMLElement, Covered>();
let observer: MutationObserver | null = null;

function keyOf(slot: Element): string | null {
  for (const name of slot.classList) {
    if (name.startsWith(KEY_PREFIX)) return name.slice(KEY_PREFIX.length) || null;
  }
  return null;
}

/** Live views whose slot left the page in the mutations being handled, by key: a slot of the
 * same widget drawn in the same mutations (the front end redrawing an output the kernel updated
 * with the same copy) takes the view over instead of drawing a new one. */
let orphans: Map<string, { slot: HTMLElement; entry: Covered }[]> | null = null;

function cover(slot: HTMLElement): void {
  if (covered.has(slot) || !slot.isConnected) return;
  const key = keyOf(slot);
  const session = key === null ? undefined : sessions.get(key);
  if (key === null || !session) return;
  const orphan = orphans?.get(key)?.shift();
  // The old slot keeps its copies (should it come back, it shows them until covered again).
  if (orphan) orphan.slot.append(...orphan.entry.copies);
  const host = orphan?.entry.host ?? document.createElement("div");
  let dispose: () => void;
  if (orphan) {
    dispose = orphan.entry.dispose;
  } else {
    host.className = "anvia-live-view";
    try {
      dispose = mountView(session, host);
    } catch (err) {
      console.error("anvia: could not draw the live view of a transcript", err);
      return;
    }
  }
  const copies = [...slot.children].filter((c): c is HTMLElement => c instanceof HTMLElement && c.matches(COPY_SELECTOR));
  for (const copy of copies) copy.remove();
  slot.prepend(host);
  covered.set(slot, { key, host, copies, dispose });
  // A moved view lost its scroll position with its layout: its transcript puts it back.
  // (and a view that had the focus takes it back: the move took it away without a word)
  if (orphan) for (const el of host.querySelectorAll(".anvia-transcript, .anvia-root")) el.dispatchEvent(new Event(MOVED_EVENT));
}

/** Let go of a view whose slot left the page: disposed now, or (while mutations are handled)
 * kept for a slot of the same widget drawn in the same mutations. */
function release(slot: HTMLElement): void {
  const entry = covered.get(slot);
  if (!entry) return;
  if (orphans === null) {
    uncover(slot);
    return;
  }
  covered.delete(slot);
  const list = orphans.get(entry.key) ?? [];
  list.push({ slot, entry });
  orphans.set(entry.key, list);
}

function uncover(slot: HTMLElement): void {
  const entry = covered.get(slot);
  if (!entry) return;
  covered.delete(slot);
  try {
    entry.dispose();
  } finally {
    entry.host.remove();
    slot.append(...entry.copies);
  }
}

/** Cover the slots in `root` (itself included). */
function scan(root: ParentNode): void {
  if (root instanceof HTMLElement && root.classList.contains(SLOT_CLASS)) cover(root);
  for (const slot of root.querySelectorAll<HTMLElement>(`.${SLOT_CLASS}`)) cover(slot);
}

function onMutations(records: MutationRecord[]): void {
  orphans = new Map();
  try {
    if (covered.size > 0) {
      for (const slot of [...covered.keys()]) if (!slot.isConnected) release(slot);
    }
    for (const record of records) {
      for (const node of record.addedNodes) {
        if (node.nodeType !== 1) continue;
        const el = node as HTMLElement;
        // Cheap first: most of what the page adds (editors, our own views) holds no slot.
        if (el.classList.contains(SLOT_CLASS) || el.getElementsByClassName(SLOT_CLASS).length > 0) scan(el);
      }
    }
  } finally {
    const left = [...orphans.values()].flat();
    orphans = null;
    for (const { slot, entry } of left) {
      try {
        entry.dispose();
      } finally {
        entry.host.remove();
        slot.append(...entry.copies);
      }
    }
  }
}

/**
 * Offer the session of the widget `key` for the static copies of its transcript in the page;
 * returns the function that withdraws it (its live views go, the copies show again).
 */
export function offerSession(key: string, session: Session): () => void {
  if (!key || typeof document === "undefined") return () => {};
  sessions.set(key, session);
  hideRules();
  if (observer === null && typeof MutationObserver === "function") {
    observer = new MutationObserver(onMutations);
    observer.observe(document.body ?? document.documentElement, { childList: true, subtree: true });
  }
  scan(document);
  return () => {
    if (sessions.get(key) !== session) return;
    sessions.delete(key);
    hideRules();
    for (const [slot, entry] of [...covered]) if (entry.key === key) uncover(slot);
    if (sessions.size === 0 && observer !== null) {
      observer.disconnect();
      observer = null;
    }
  };
}

/** Slots covered now (for tests). */
export const coveredSlots = (): HTMLElement[] => [...covered.keys()];
