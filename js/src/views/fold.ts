// A <pre> for long values (tool arguments, results, output) or a block of long prose (a reason):
// text only, folded with a "Show more" / "Show less" toggle when long, and bounded in height
// (scrollable) when unfolded.
import { button, h } from "../dom";

export const FOLD_CHARS = 1500;
export const FOLD_LINES = 20;

/** Lists and objects nested deeper than this are shown as sent, not laid out: each level indents
 * every line inside it, so a few kB of brackets (a tool's result, a model's arguments) would
 * become hundreds of MB of spaces, or more than a string may hold. */
export const MAX_PRETTY_DEPTH = 100;

/** Pretty-print JSON text when it parses to an object or array; otherwise return it as is.
 * Laid out as `JSON.stringify(value, null, 2)` lays it out, but a whole number JavaScript's
 * numbers would round (past 2**53: a 64-bit id) is kept as written. */
export function prettyJson(text: string): string {
  const t = text.trim();
  if (!t.startsWith("{") && !t.startsWith("[")) return text;
  try {
    JSON.parse(t);
  } catch {
    return text;
  }
  return relaid(t) ?? text;
}

const SPACE = /\s/;
const VALUE_END = /[\s,:\]}]/;
const WHOLE = /^-?\d+$/;

/** Valid JSON text `t` laid out with two-space indents, token by token (null: nested deeper
 * than `MAX_PRETTY_DEPTH`). */
function relaid(t: string): string | null {
  let out = "";
  let depth = 0;
  const newline = (): string => `\n${"  ".repeat(depth)}`;
  const at = (k: number): string => t.charAt(k);
  for (let i = 0; i < t.length; ) {
    const c = at(i);
    if (SPACE.test(c)) {
      i++;
    } else if (c === '"') {
      let j = i + 1;
      while (at(j) !== '"') j += at(j) === "\\" ? 2 : 1;
      out += JSON.stringify(JSON.parse(t.slice(i, j + 1))); // escapes as JSON.stringify writes them
      i = j + 1;
    } else if (c === "{" || c === "[") {
      let j = i + 1;
      while (SPACE.test(at(j))) j++;
      if (at(j) === (c === "{" ? "}" : "]")) {
        out += c + at(j);
        i = j + 1;
      } else {
        if (++depth > MAX_PRETTY_DEPTH) return null;
        out += c + newline();
        i++;
      }
    } else if (c === "}" || c === "]") {
      depth--;
      out += newline() + c;
      i++;
    } else if (c === ",") {
      out += `,${newline()}`;
      i++;
    } else if (c === ":") {
      out += ": ";
      i++;
    } else {
      let j = i;
      while (j < t.length && !VALUE_END.test(at(j))) j++;
      const token = t.slice(i, j);
      const number = Number(token);
      const exact = !WHOLE.test(token) || Number.isSafeInteger(number);
      out += exact ? JSON.stringify(JSON.parse(token)) : token; // (valid JSON: no leading zeros)
      i = j;
    }
  }
  return out;
}

/**
 * Bidirectional controls and zero-width characters: invisible, but they change how the text
 * around them reads (U+202E shows what follows backwards) or hide a difference (U+200B). Not the
 * joiners U+200C/U+200D, which emoji and some scripts need. The same list as `_INVISIBLE` in
 * anvia_notebook/notebook/_wire_text.py.
 */
const INVISIBLE = /[\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]/g;

/** JSON text with each invisible control written as its JSON escape (`\u202e`): the same
 * value, but what a person reads (and approves) is what it is. */
export const showInvisibles = (json: string): string =>
  json.replace(INVISIBLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

/** Controls that turn the text after them around or embed it (U+202E shows `txt.exe` as
 * `exe.txt`), not the marks U+200E/U+200F that right-to-left prose uses. */
const OVERRIDES = /[\u202a-\u202e\u2066-\u2069]/g;

/** Model-written prose (an approval's reason and its decision's, a question and its choices)
 * with each direction override written as its escape (`\u202e`): it reads in the order it was
 * written. */
export const showOverrides = (text: string): string =>
  text.replace(OVERRIDES, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);

/** A tool's arguments (JSON text, complete or still streaming) as shown. */
export const prettyArgs = (text: string): string => showInvisibles(prettyJson(text));

/** A tool's arguments (a value: an approval's, or edited ones) as shown and edited. */
export const prettyArgsValue = (value: unknown): string => showInvisibles(prettyValue(value));

export function prettyValue(value: unknown): string {
  if (typeof value === "string") return prettyJson(value);
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

/** Where a text is cut when folded (null: it is short enough to show whole). */
export function foldPoint(text: string, chars = FOLD_CHARS, maxLines = FOLD_LINES): number | null {
  let cut = text.length > chars ? chars : null;
  let lines = 0;
  for (let i = 0; i < text.length && (cut === null || i < cut); i++) {
    if (text.charCodeAt(i) === 10 && ++lines >= maxLines) {
      cut = i;
      break;
    }
  }
  return cut;
}

export interface FoldedPre {
  el: HTMLElement;
  set(text: string): void;
  /** Append raw text (cheap when unfolded: extends the text node). */
  append(text: string): void;
  readonly text: string;
}

export interface FoldOptions {
  /** Fold after this many characters or lines (defaults: FOLD_CHARS, FOLD_LINES). */
  chars?: number;
  lines?: number;
  /** Prose (a reason) rather than code: a `div` in the text font, not a `pre`. */
  prose?: boolean;
  /** An id for the text element (aria wiring). */
  id?: string;
}

export function foldedPre(className: string, label: string, options: FoldOptions = {}): FoldedPre {
  const { chars = FOLD_CHARS, lines = FOLD_LINES } = options;
  const code = document.createTextNode("");
  const pre = h(options.prose ? "div" : "pre", {
    class: options.prose ? `anvia-pre anvia-prose ${className}` : `anvia-pre ${className}`,
    // Focusable (its text scrolls) and named: a group, as a <pre> or <div> takes no name (not
    // a region: a transcript has a "Result" and an "Arguments" per tool call, too many landmarks).
    role: "group",
    tabindex: 0,
    "aria-label": label,
    id: options.id,
  });
  pre.appendChild(code);
  let full = "";
  let expanded = false;
  const toggle = button("Show more", () => {
    expanded = !expanded;
    render();
  }, { class: "anvia-button anvia-link-button anvia-fold-toggle", hidden: true });
  const el = h("div", { class: "anvia-fold" }, pre, toggle);

  function render(): void {
    const cut = foldPoint(full, chars, lines);
    if (cut === null) {
      code.data = full;
      toggle.hidden = true;
      return;
    }
    code.data = expanded ? full : `${full.slice(0, cut)}\n…`;
    toggle.hidden = false;
    toggle.textContent = expanded ? "Show less" : "Show more";
    toggle.setAttribute("aria-expanded", String(expanded));
  }

  return {
    el,
    get text() {
      return full;
    },
    set(text: string) {
      if (text === full) return;
      full = text;
      render();
    },
    append(text: string) {
      full += text;
      if (toggle.hidden && foldPoint(full, chars, lines) === null) code.appendData(text);
      else render();
    },
  };
}
