// Views of single transcript entries. Each supports incremental updates: `append` for streamed
// text (assistant markdown drawn when a batch arrives, at most about once a frame, from its last
// block on) and `update` for patches.
import { h } from "../dom";
import { cancelScheduled, scheduleLeading } from "../frame";
import type { AppendField, Entry } from "../protocol";
import type { Session } from "../session";
import { foldedPre } from "./fold";
import { StreamingMarkdown } from "./markdown";
import { toolView } from "./tool";

export interface EntryView {
  el: HTMLElement;
  /** Where a sub-agent's entries go (a tool entry that runs a sub-agent), if this view has it. */
  nested?: HTMLElement;
  update(entry: Entry): void;
  append(field: AppendField, text: string): void;
  dispose(): void;
}

/** A message rendered as sanitised markdown (user and assistant). */
function markdownView(entry: Entry & { text: string }, label: string): EntryView {
  const body = h("div", { class: "anvia-md" });
  const el = h("div", { class: `anvia-entry anvia-entry-${entry.kind}` }, h("div", { class: "anvia-role" }, label), body);
  const markdown = new StreamingMarkdown(body);
  let current = entry;
  let rendered: string | null = null;
  const render = (): void => {
    if (rendered === current.text) return;
    rendered = current.text;
    markdown.render(current.text); // appended text re-renders only the last block
  };
  render();
  return {
    el,
    update(e) {
      current = e as typeof entry;
      render();
    },
    append() {
      scheduleLeading(el, render);
    },
    dispose() {
      cancelScheduled(el);
    },
  };
}

/** A message sent into the run while it went (`steer`): a user bubble, marked as such, where the
 * run delivered it. */
function steeredView(entry: Entry & { text: string }): EntryView {
  const view = markdownView(entry, USER_LABEL_STEERED);
  view.el.classList.add("anvia-steered");
  return view;
}

/** The label of a steered message (the static copy uses the same, in `_snapshot.py`). */
export const USER_LABEL_STEERED = "You (during the run)";

/** A view whose whole content is one text node: updates and appends touch only that node. */
function textNodeView(el: HTMLElement, text: Text): EntryView {
  return {
    el,
    update(e) {
      const t = (e as Entry & { text: string }).text;
      if (text.data !== t) text.data = t;
    },
    append(field, added) {
      if (field === "text") text.appendData(added);
    },
    dispose() {},
  };
}

/** Reasoning: collapsed, plain text (appending extends one text node). */
function reasoningView(entry: Entry & { text: string }): EntryView {
  const text = document.createTextNode(entry.text);
  const el = h(
    "details",
    { class: "anvia-entry anvia-entry-reasoning" },
    h("summary", {}, "Reasoning"),
    h("div", { class: "anvia-reasoning-text" }, text),
  );
  return textNodeView(el, text);
}

/** A line of plain text folded when long, as a tool's result is: an error (a provider's error
 * can hold a whole HTML page) after `label`, or a notice (a hook's cancel reason can be of any
 * length) with none. */
function foldedLineView(entry: Entry & { text: string }, label: string | null, name: string): EntryView {
  const fold = foldedPre("anvia-line-text", name, { prose: true });
  fold.set(entry.text);
  const el = h("div", { class: `anvia-entry anvia-entry-${entry.kind}` }, label ? h("strong", {}, `${label}: `) : null, fold.el);
  return {
    el,
    update(e) {
      fold.set((e as Entry & { text: string }).text);
    },
    append(field, added) {
      if (field === "text") fold.append(added);
    },
    dispose() {},
  };
}

export function entryView(session: Session, entry: Entry): EntryView {
  switch (entry.kind) {
    case "user":
      return entry.steered ? steeredView(entry) : markdownView(entry, "You");
    case "assistant":
      return markdownView(entry, session.replyLabel());
    case "reasoning":
      return reasoningView(entry);
    case "tool":
      return toolView(session, entry);
    case "error":
      return foldedLineView(entry, "Error", "Error");
    case "notice":
      return foldedLineView(entry, null, "Notice");
  }
}
