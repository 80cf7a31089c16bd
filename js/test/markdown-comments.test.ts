// Model text full of `<!--` that never closes: each one is shown as text, in time linear in the
// text (every `<!--` used to scan the rest of the text for its `-->`: 160 kB took 12 s, and a
// streamed reply with raw HTML is rendered whole at every frame).
import { describe, expect, it } from "vitest";
import { neutralizeRawHtml, renderMarkdown } from "../src/views/markdown";

describe("unclosed HTML comments", () => {
  it("are escaped as text, quickly however many there are", () => {
    const text = "<!--".repeat(40_000);
    const started = performance.now();
    const out = neutralizeRawHtml(text);
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(out === "&lt;!--".repeat(40_000)).toBe(true);
  });

  it("still drop a closed comment, before and after unclosed ones", () => {
    expect(neutralizeRawHtml("<!-- a --> b <!-- c")).toBe(" b &lt;!-- c");
    expect(neutralizeRawHtml("<!-- <!-- x --> y")).toBe(" y");
    expect(neutralizeRawHtml("<!-- a --> <!-- b --> c <!--")).toBe("  c &lt;!--");
    expect(renderMarkdown("Say <!-- hidden --> hi <!-- open").textContent?.trim()).toBe("Say  hi <!-- open");
  });
});
