// @vitest-environment jsdom
// Streamed markdown rendered block by block gives the same DOM as rendering the whole text.
// jsdom: DOMPurify works fully there (see sanitize-cases.ts), so the output is the real one.
import { Lexer } from "marked";
import { describe, expect, it, vi } from "vitest";
import { StreamingMarkdown, renderMarkdown } from "../src/views/markdown";

const whole = (text: string): string => {
  const div = document.createElement("div");
  div.appendChild(renderMarkdown(text));
  return div.innerHTML;
};

const DOCS: Record<string, string> = {
  paragraphs: "First paragraph with **bold** and `code`.\n\nSecond one,\nwrapped.\n\n\n\nThird after blank lines.",
  headings: "# Title\n\nText under it.\n\n## Sub\nNo blank line before this paragraph.\n\nSetext\n===\n\nAnother\n---\n",
  lists:
    "Steps:\n\n1. one\n2. two\n   continued\n\n3. three (loose now)\n\n- a\n- b\n  - nested\n\n  more of b\n\n* star\n\nAfter the list.",
  code:
    "Here:\n\n```python\ndef f():\n\n    return 1\n```\n\nIndented:\n\n    x = 1\n\n    y = 2\n\nDone.\n\n~~~\nunclosed fence\n\nstill code",
  table: "| a | b |\n|---|:-:|\n| 1 | 2 |\n| 3 | 4 |\n\nAfter.\n\n| lone |\n",
  quotes: "> quoted\nlazy line\n\n> second\n>\n> > nested\n\nplain",
  links:
    "See [the docs](https://example.com) and <https://a.example>, www.b.example, mail@c.example.\n\nA [ref link][r] and [r].\n\n[r]: https://r.example \"Title\"\n\nUsed again: [r].",
  misc: "Line with two spaces  \nbreak. ~~struck~~ *em* _em_ __strong__\n\n---\n\n***\n\nEnd\r\nwith CRLF\r\n\r\nparagraph.",
  nested:
    "1) first\n2) second\n\n   - inner\n\n     ```\n     code in a list\n\n     more\n     ```\n10) tenth\n\ntext\n\n- x\n\n1. y\n\n    indented after list",
  llm:
    "Sure! Here is a plan:\n\n## Steps\n\n1. **Check** the order `A1001`.\n2. Issue the refund:\n   ```json\n   {\"amount\": 5}\n   ```\n3. Tell the customer.\n\n> Note: refunds take *3-5 days*.\n\n| Item | Cost |\n| --- | ---: |\n| Mug | $5 |\n\nLet me know if you need anything else.",
  html: "Before <b>bold\n\nstill</b> after.\n\n<div>\n\nin a div\n\n</div>\n\nEnd.",
};

function chunks(text: string, size: number | "random"): string[] {
  let seed = 7;
  const next = (): number => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return 1 + (seed % 23);
  };
  const out: string[] = [];
  for (let i = 0; i < text.length; ) {
    const n = size === "random" ? next() : size;
    out.push(text.slice(i, i + n));
    i += n;
  }
  return out;
}

describe("StreamingMarkdown", () => {
  for (const [name, doc] of Object.entries(DOCS)) {
    for (const size of [doc.length < 120 ? 1 : 3, "random"] as const) {
      it(`matches the whole render at every step: ${name}, chunks of ${size}`, { timeout: 30_000 }, () => {
        const el = document.createElement("div");
        const md = new StreamingMarkdown(el);
        let text = "";
        for (const piece of chunks(doc, size)) {
          text += piece;
          md.render(text);
          expect(el.innerHTML, JSON.stringify(text)).toBe(whole(text));
        }
      });
    }
  }

  it("renders a text that does not extend the previous one from scratch", () => {
    const el = document.createElement("div");
    const md = new StreamingMarkdown(el);
    md.render("# One\n\nbody");
    md.render("Two\n\n- x");
    expect(el.innerHTML).toBe(whole("Two\n\n- x"));
    md.render("");
    expect(el.innerHTML).toBe("");
  });

  it("keeps the DOM of finished blocks and re-renders only from the last one", () => {
    const el = document.createElement("div");
    const md = new StreamingMarkdown(el);
    md.render("first paragraph\n\nsecond");
    const first = el.querySelector("p");
    md.render("first paragraph\n\nsecond grows\n\nthird");
    expect(el.querySelector("p")).toBe(first);
    expect(el.querySelectorAll("p")).toHaveLength(3);
  });

  it("lexes only the tail when text is appended", () => {
    const el = document.createElement("div");
    const md = new StreamingMarkdown(el);
    const long = Array.from({ length: 200 }, (_, i) => `Paragraph ${i} with some words.`).join("\n\n");
    md.render(long);
    const spy = vi.spyOn(Lexer.prototype, "lex");
    md.render(`${long} More.`);
    expect(spy).toHaveBeenCalledTimes(1);
    expect((spy.mock.calls[0]![0] as string).length).toBeLessThan(100);
    spy.mockRestore();
  });
});
