// A <pre> for long values (tool arguments, results, output): text only, folded with a
// "Show more" / "Show less" toggle when long.
import { button, h } from "../dom";

export const FOLD_CHARS = 1500;
export const FOLD_LINES = 20;

/** Pretty-print JSON text when it parses to an object or array; otherwise return it as is. */
export function prettyJson(text: string): string {
  const t = text.trim();
  if (!t.startsWith("{") && !t.startsWith("[")) return text;
  try {
    return JSON.stringify(JSON.parse(t), null, 2);
  } catch {
    return text;
  }
}

export function prettyValue(value: unknown): string {
  if (typeof value === "string") return prettyJson(value);
  try {
    return JSON.stringify(value, null, 2) ?? String(value);
  } catch {
    return String(value);
  }
}

function foldPoint(text: string): number | null {
  let cut = text.length > FOLD_CHARS ? FOLD_CHARS : null;
  let lines = 0;
  for (let i = 0; i < text.length && (cut === null || i < cut); i++) {
    if (text.charCodeAt(i) === 10 && ++lines >= FOLD_LINES) {
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

export function foldedPre(className: string, label: string): FoldedPre {
  const code = document.createTextNode("");
  const pre = h("pre", { class: `anvia-pre ${className}`, tabindex: 0, "aria-label": label });
  pre.appendChild(code);
  let full = "";
  let expanded = false;
  const toggle = button("Show more", () => {
    expanded = !expanded;
    render();
  }, { class: "anvia-button anvia-link-button anvia-fold-toggle", hidden: true });
  const el = h("div", { class: "anvia-fold" }, pre, toggle);

  function render(): void {
    const cut = foldPoint(full);
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
      if (toggle.hidden && foldPoint(full) === null) code.appendData(text);
      else render();
    },
  };
}
