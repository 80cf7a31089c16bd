// Markdown from the model, rendered with marked and sanitised with DOMPurify.
// Our DOM shares the page with JupyterLab: no scripts, no event handlers, no data-* attributes
// (JupyterLab's commandlinker acts on them), no styles/ids/classes, and only http(s)/mailto links,
// which open in a new tab without an opener.
import DOMPurify, { type Config } from "dompurify";
import { Marked } from "marked";

const marked = new Marked({ gfm: true, breaks: false, async: false });

const SAFE_URL = /^(?:https?:|mailto:)/i;

const CONFIG: Config = {
  USE_PROFILES: { html: true }, // no SVG or MathML
  ALLOW_DATA_ATTR: false,
  ALLOW_UNKNOWN_PROTOCOLS: false,
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  FORBID_TAGS: [
    "style",
    "script",
    "form",
    "input",
    "button",
    "textarea",
    "select",
    "option",
    "iframe",
    "frame",
    "frameset",
    "object",
    "embed",
    "base",
    "link",
    "meta",
    "template",
    "dialog",
  ],
  FORBID_ATTR: ["style", "id", "name", "class", "target", "form", "formaction", "action", "srcset", "ping"],
  SANITIZE_NAMED_PROPS: true,
};

type Purifier = ReturnType<typeof DOMPurify>;
let purifier: Purifier | null = null;

function getPurifier(): Purifier {
  if (purifier) return purifier;
  const p = DOMPurify(window);
  p.addHook("uponSanitizeAttribute", (_node, data) => {
    // Belt and braces: whatever the config, never keep data-* or on* attributes.
    const name = data.attrName.toLowerCase();
    if (name.startsWith("data-") || name.startsWith("on")) data.keepAttr = false;
  });
  p.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A") {
      const href = node.getAttribute("href");
      if (href !== null && !SAFE_URL.test(href.trim())) node.removeAttribute("href");
      if (node.hasAttribute("href")) {
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer");
      }
    }
    if (node.tagName === "IMG") {
      const src = node.getAttribute("src");
      if (src !== null && !/^https?:/i.test(src.trim())) node.removeAttribute("src");
    }
  });
  purifier = p;
  return p;
}

/** Tags that must never survive, whatever the sanitiser did. */
const FORBIDDEN = new Set([
  ...(CONFIG.FORBID_TAGS as string[]),
  "svg",
  "math",
  "noscript",
  "applet",
  "portal",
  "slot",
]);

/** The only attributes kept on markdown output. */
const ALLOWED_ATTRS = new Set([
  "href",
  "src",
  "alt",
  "title",
  "target",
  "rel",
  "colspan",
  "rowspan",
  "align",
  "start",
  "reversed",
  "width",
  "height",
  "lang",
  "dir",
  "cite",
  "datetime",
  "scope",
  "open",
]);

/**
 * A second, independent pass over the sanitiser's output with a strict allowlist, so that the
 * guarantees above hold even if DOMPurify is misconfigured or meets a DOM it does not handle.
 */
function enforceInert(root: DocumentFragment): void {
  for (const el of [...root.querySelectorAll("*")]) {
    if (FORBIDDEN.has(el.localName.toLowerCase())) {
      el.remove();
      continue;
    }
    for (const attr of [...el.attributes]) {
      const name = attr.name.toLowerCase();
      const value = attr.value.trim();
      if (
        !ALLOWED_ATTRS.has(name) ||
        (name === "href" && !SAFE_URL.test(value)) ||
        (name === "src" && !/^https?:/i.test(value))
      ) {
        el.removeAttribute(attr.name);
      }
    }
    if (el.localName === "a") {
      if (el.hasAttribute("href")) {
        el.setAttribute("target", "_blank");
        el.setAttribute("rel", "noopener noreferrer");
      } else {
        el.removeAttribute("target");
        el.removeAttribute("rel");
      }
    } else {
      el.removeAttribute("target");
    }
  }
}

/** Markdown text to a sanitised fragment of this document. */
export function renderMarkdown(text: string): DocumentFragment {
  let html: string;
  try {
    html = marked.parse(text) as string;
  } catch {
    const frag = document.createDocumentFragment();
    frag.appendChild(document.createTextNode(text));
    return frag;
  }
  const frag = getPurifier().sanitize(html, { ...CONFIG, RETURN_DOM_FRAGMENT: true }) as DocumentFragment;
  enforceInert(frag);
  return frag;
}

/** Replace the children of `el` with the rendered markdown. */
export function setMarkdown(el: HTMLElement, text: string): void {
  el.replaceChildren(renderMarkdown(text));
}
