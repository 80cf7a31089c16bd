// Streamed markdown rendered block by block gives the same HTML as rendering the whole text, on
// random markdown. This checks the block logic alone: HTML goes to the DOM unsanitised (under
// happy-dom DOMPurify does not work fully); markdown-stream.jsdom.test.ts checks hand-written
// documents with the real sanitiser.
import { Marked } from "marked";
import { describe, expect, it } from "vitest";
import { StreamingMarkdown } from "../src/views/markdown";

const marked = new Marked({ gfm: true, breaks: false, async: false });

const toFragment = (html: string): DocumentFragment => {
  const template = document.createElement("template");
  template.innerHTML = html;
  return template.content;
};

const whole = (text: string): string => {
  const div = document.createElement("div");
  div.appendChild(toFragment(marked.parse(text) as string));
  return div.innerHTML;
};

describe("StreamingMarkdown on random markdown", () => {
  it("matches the whole render at every step, streamed in random pieces", { timeout: 60_000 }, () => {
    const pieces = [
      "word ", "two words ", "\n", "\n\n", "- ", "* ", "1. ", "2) ", "12. ", "  ", "    ", "> ", "# ",
      "## ", "```", "~~~", "**", "_", "`", "|", "| a | b |\n|---|---|\n", "---", "===", "[r]", "[r]: https://r.example ",
      "[x](https://x.example)", "\\", "&amp; ", "3", ".",
    ];
    let seed = 12345;
    const rand = (n: number): number => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed % n;
    };
    for (let doc = 0; doc < 400; doc++) {
      let full = "";
      const count = 5 + rand(30);
      for (let i = 0; i < count; i++) full += pieces[rand(pieces.length)];
      const el = document.createElement("div");
      const md = new StreamingMarkdown(el, toFragment);
      let text = "";
      for (let i = 0; i < full.length; ) {
        const n = 1 + rand(6);
        text += full.slice(i, i + n);
        i += n;
        md.render(text);
        expect(el.innerHTML, JSON.stringify(text)).toBe(whole(text));
      }
    }
  });

});
