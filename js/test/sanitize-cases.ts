// Sanitising cases, run under happy-dom (markdown.test.ts) and jsdom (markdown.jsdom.test.ts).
import { afterEach, describe, expect, it } from "vitest";
import { renderMarkdown } from "../src/views/markdown";
import { batch, flushFrames, mount, status, toolEntry } from "./helpers";

const render = (text: string): HTMLElement => {
  const div = document.createElement("div");
  div.appendChild(renderMarkdown(text));
  return div;
};

/** Nothing in `el` can run code or talk to JupyterLab. */
function expectInert(el: HTMLElement): void {
  expect(el.querySelector("script, iframe, object, embed, style, form, button, input, svg, math, base, meta, link")).toBeNull();
  for (const node of el.querySelectorAll("*")) {
    for (const attr of node.attributes) {
      expect(attr.name.startsWith("on"), `${node.tagName} ${attr.name}`).toBe(false);
      expect(attr.name.startsWith("data-"), `${node.tagName} ${attr.name}`).toBe(false);
      expect(["style", "id", "class", "name"]).not.toContain(attr.name);
      if (["href", "src", "action", "formaction", "xlink:href"].includes(attr.name)) {
        expect(attr.value).toMatch(/^(https?:|mailto:)/i);
      }
    }
  }
}

afterEach(() => {
  document.body.replaceChildren();
});

/**
 * `faithful`: whether DOMPurify works fully in this DOM. Under happy-dom it does not (its
 * clobbering check rejects happy-dom's parsed nodes and it stops early), so there only the
 * guarantees that do not depend on DOMPurify are checked: our own allowlist pass still makes
 * the output inert. jsdom, which DOMPurify is tested against, checks everything.
 */
export function sanitizeSuite(env: string, faithful: boolean): void {
describe(`markdown sanitising (${env})`, () => {
  // Ordinary markdown only survives intact where DOMPurify works fully (not under happy-dom),
  // so that case is registered for the faithful DOM alone rather than skipped.
  if (faithful) {
    it("renders ordinary markdown", () => {
      const el = render("# Title\n\nSome **bold** and `code`.\n\n- a\n- b\n\n| x | y |\n|---|---|\n| 1 | 2 |");
      expect(el.querySelector("h1")?.textContent).toBe("Title");
      expect(el.querySelector("strong")?.textContent).toBe("bold");
      expect(el.querySelectorAll("li")).toHaveLength(2);
      expect(el.querySelector("td")?.textContent).toBe("1");
    });
  }

  it("neutralises an img onerror", () => {
    const el = render("hello <img src=x onerror=alert(1)>");
    expectInert(el);
    expect(el.innerHTML).not.toContain("onerror");
  });

  it("drops scripts", () => {
    const el = render("<script>alert(1)</script>\n\ntext <script src='https://evil.example/x.js'></script>");
    expectInert(el);
    if (faithful) expect(el.textContent).not.toContain("alert(1)");
  });

  it("shows text that only looks like a tag as text, never losing what follows", () => {
    const prose = [
      "Remove the <style> element and the <script> tag, then reload.",
      "TypeError: <lambda>() missing 1 required positional argument: 'x'",
      "Close it with </textarea> or <title> and <xmp>, or <plaintext> then more.",
      "An unclosed comment <!-- and <noscript> and <iframe> and <svg> here, then <?php and <!DOCTYPE x> end.",
      "Generics: List<String> and Map<K, V> and a < b > c and <module-name>.",
    ];
    for (const text of prose) {
      const el = render(text);
      expectInert(el);
      expect(el.textContent?.trim(), text).toBe(text);
    }
  });

  it("drops real dangerous markup, keeping the prose around it", () => {
    const el = render(
      "Remove the <script> tag. <script>alert(1)</script>Then <style>p{color:red}</style>drop the " +
        "<style> element, <iframe src=\"https://evil.example\"></iframe>and <b>reload</b>.",
    );
    expectInert(el);
    const text = el.textContent ?? "";
    expect(text).toContain("Remove the <script> tag. Then drop the <style> element, and");
    expect(text).not.toContain("alert(1)");
    expect(text).not.toContain("color:red");
    if (faithful) expect(el.querySelector("b")?.textContent).toBe("reload");
  });

  it("removes javascript: and other unsafe links", () => {
    const el = render(
      "[a](javascript:alert(1)) <a href='JaVaScRiPt:alert(2)'>b</a> <a href='jav&#x61;script:alert(3)'>c</a> " +
        "[d](data:text/html,<script>alert(4)</script>) [e](vbscript:x) [f](/lab/tree/secret.ipynb) [g](#anchor)",
    );
    expectInert(el);
    const links = [...el.querySelectorAll("a")];
    expect(links.length).toBeGreaterThan(0);
    for (const a of links) expect(a.hasAttribute("href")).toBe(false);
  });

  it("strips every data-* attribute, including JupyterLab commandlinker ones", () => {
    const el = render(
      '<div data-commandlinker-command="terminal:create-new" data-commandlinker-args="{}">click</div>\n\n' +
        '<a href="https://example.com" data-commandlinker-command="apputils:run-all">x</a>\n\n' +
        '<span data-foo="1" data-jp-theme-name="evil">y</span>\n\n' +
        '<button data-commandlinker-command="notebook:run-cell">z</button>',
    );
    expectInert(el);
    expect(el.innerHTML).not.toContain("commandlinker");
    expect(el.textContent).toContain("click");
  });

  it("drops svg, forms, iframes, styles and event handlers", () => {
    const el = render(
      '<svg onload="alert(1)"><circle r="5"/></svg><iframe srcdoc="<script>alert(1)</script>"></iframe>' +
        '<form action="https://x"><input name="p"></form><style>body{display:none}</style>' +
        '<p style="position:fixed" onclick="alert(1)" id="x" class="jp-Dialog">p</p><math><mi>x</mi></math>',
    );
    expectInert(el);
  });

  it("makes safe links open in a new tab without an opener", () => {
    const el = render("[site](https://example.com/a?b=1) and [mail](mailto:a@example.com) and <http://plain.example>");
    const links = [...el.querySelectorAll("a")];
    expect(links.map((a) => a.getAttribute("href"))).toEqual([
      "https://example.com/a?b=1",
      "mailto:a@example.com",
      "http://plain.example",
    ]);
    for (const a of links) {
      expect(a.getAttribute("target")).toBe("_blank");
      expect(a.getAttribute("rel")).toBe("noopener noreferrer");
    }
  });

  it("shows images as links, never loading them (no leak through an image address)", () => {
    const el = render(
      "![a](https://evil.example/a.png?q=secret) ![b](javascript:alert(1)) ![c](data:image/png;base64,AAAA) " +
        '![d](/files/x.png) <img src="http://evil.example/x?leak=1" alt="raw"> <img src="https://evil.example/y">',
    );
    expect(el.querySelector("img, picture, source, video, audio")).toBeNull();
    expect(el.innerHTML).not.toContain(" src=");
    const links = [...el.querySelectorAll("a")];
    expect(links.map((a) => [a.textContent, a.getAttribute("href")])).toEqual([
      ["Image: a", "https://evil.example/a.png?q=secret"],
      ["Image: raw", "http://evil.example/x?leak=1"],
      ["Image", "https://evil.example/y"],
    ]);
    for (const a of links) {
      expect(a.getAttribute("target")).toBe("_blank");
      expect(a.getAttribute("rel")).toBe("noopener noreferrer");
    }
    // An image at any other address leaves its alt text, and no link.
    for (const alt of ["b", "c", "d"]) expect(el.textContent).toContain(alt);
    expectInert(el);
  });

  it("drops media and background addresses that would be fetched", () => {
    const el = render(
      '<table background="https://evil.example/bg"><tr><td>x</td></tr></table> ' +
        '<video src="https://evil.example/v" poster="https://evil.example/p"></video>' +
        '<picture><source srcset="https://evil.example/s"></picture>',
    );
    expect(el.innerHTML).not.toContain("evil.example");
    expectInert(el);
  });

  it("keeps model text inert in the transcript", () => {
    const m = mount([
      { kind: "assistant", id: "a1", turn: 1, text: "<img src=x onerror=alert(1)> [x](javascript:alert(1))" },
      { kind: "user", id: "u1", text: '<div data-commandlinker-command="x">hi</div><script>alert(1)</script>' },
    ]);
    batch(m.model, { op: "append", id: "a1", field: "text", text: " <b onmouseover=alert(1)>more</b>" });
    flushFrames();
    for (const md of m.root.querySelectorAll<HTMLElement>(".anvia-md")) expectInert(md);
    if (faithful) expect(m.root.querySelector(".anvia-entry-assistant b")?.textContent).toBe("more");
    m.cleanup();
  });

  it("shows tag-like text as text in streamed messages, errors, notices and the status line", () => {
    const error = "TypeError: <lambda>() takes 0 positional arguments but 1 was given";
    const m = mount(
      [
        { kind: "assistant", id: "a1", turn: 1, text: "Remove the <style> element" },
        { kind: "error", id: "e1", text: error },
        { kind: "notice", id: "n1", text: "Run cancelled: <script> tag found" },
      ],
      status("error", { error }),
    );
    batch(m.model, { op: "append", id: "a1", field: "text", text: " and the <script> tag, then reload." });
    flushFrames();
    const assistant = m.root.querySelector(".anvia-entry-assistant .anvia-md") as HTMLElement;
    expect(assistant.textContent?.trim()).toBe("Remove the <style> element and the <script> tag, then reload.");
    expectInert(assistant);
    expect(m.root.querySelector(".anvia-entry-error .anvia-line-text")?.textContent).toBe(error);
    expect(m.root.querySelector(".anvia-entry-notice .anvia-line-text")?.textContent).toBe("Run cancelled: <script> tag found");
    expect(m.root.querySelector(".anvia-status-meta")?.textContent).toContain(error);
    expect(m.root.querySelector("script, style, lambda")).toBeNull();
    m.cleanup();
  });

  it("puts tool arguments, results and output in as text", () => {
    const evil = "<img src=x onerror=alert(1)><script>alert(2)</script>";
    const m = mount([
      toolEntry("t1", {
        arguments: JSON.stringify({ html: evil }),
        result: evil,
        output: evil,
        status: "done",
      }),
    ]);
    const tool = m.root.querySelector(".anvia-entry-tool") as HTMLElement;
    expect(tool.querySelector("img, script")).toBeNull();
    expect(tool.querySelector(".anvia-tool-result")?.textContent).toBe(evil);
    expect(tool.querySelector(".anvia-tool-output")?.textContent).toBe(evil);
    expect(tool.querySelector(".anvia-tool-args")?.textContent).toContain("<img src=x onerror=alert(1)>");
    m.cleanup();
  });
});
}
