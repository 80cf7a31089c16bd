// DOM helpers. Text always goes in as text nodes: nothing here touches innerHTML.

type Attrs = Record<string, string | boolean | number | null | undefined>;
type Child = Node | string | null | undefined | false;

/** Create an element. `class` sets className; `true` sets an empty attribute; null/false skip. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    el.setAttribute(name, value === true ? "" : String(value));
  }
  append(el, ...children);
  return el;
}

export function append(parent: Node, ...children: Child[]): void {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    parent.appendChild(typeof c === "string" ? document.createTextNode(c) : c);
  }
}

/** A `<button type="button">` with a visible label and a click handler. */
export function button(label: string, onClick: (ev: MouseEvent) => void, attrs: Attrs = {}): HTMLButtonElement {
  const b = h("button", { type: "button", class: "anvia-button", ...attrs }, label);
  b.addEventListener("click", onClick);
  return b;
}

/** `count` and its noun, in the singular for one ("1 case", "3 cases"). */
export const plural = (count: number, noun: string, nouns = `${noun}s`): string =>
  `${count.toLocaleString()} ${count === 1 ? noun : nouns}`;

let uid = 0;
/** A page-unique id for aria wiring (never derived from model text). */
export const nextDomId = (prefix: string): string => `anvia-${prefix}-${++uid}`;

/** The elements around `el`, nearest first: where it sits in the page. */
export function ancestors(el: Element): Element[] {
  const list: Element[] = [];
  for (let e = el.parentElement; e; e = e.parentElement) list.push(e);
  return list;
}

/** Whether no control has the focus (the page's body holds it): a redraw took it away. */
export function nothingFocused(): boolean {
  const active = document.activeElement;
  return active === null || active === document.body;
}

export function formatTime(iso: string | null): string {
  if (!iso) return "";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}
