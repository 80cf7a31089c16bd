import { afterEach, describe, expect, it } from "vitest";
import { MAX_PRETTY_DEPTH, prettyJson } from "../src/views/fold";
import { batch, byLabel, mount, status, toolEntry } from "./helpers";

afterEach(() => {
  document.body.replaceChildren();
});

/** A JSON list nested `depth` levels deep: a few kB of text a tool may return (or a model write). */
const nested = (depth: number): string => "[".repeat(depth) + "1" + "]".repeat(depth);

describe("JSON nested very deeply", () => {
  it("is shown as it was sent, not indented level by level (which grows as the square of the depth)", () => {
    expect(MAX_PRETTY_DEPTH).toBe(100);
    const text = nested(101);
    expect(prettyJson(text)).toBe(text);
    const text2 = nested(10_000); // 20 kB: 200 MB once indented
    expect(prettyJson(text2) === text2).toBe(true); // (no diff of 200 MB when it fails)
    // Up to the limit, as JSON.stringify lays it out.
    const value = JSON.parse(nested(MAX_PRETTY_DEPTH));
    expect(prettyJson(nested(MAX_PRETTY_DEPTH))).toBe(JSON.stringify(value, null, 2));
  });

  it("as a tool's result, leaves the call in the transcript with its status and whole result", () => {
    const result = nested(30_000); // 60 kB: as indented text, longer than a string may be
    const { root, model } = mount([{ kind: "user", id: "u", text: "go" }]);
    batch(model, { op: "add", entry: toolEntry("t1", { status: "done", result }) });
    batch(model, { op: "add", entry: { kind: "assistant", id: "a", turn: 2, text: "after" } }, { op: "status", status: status("success") });
    const tool = root.querySelector(".anvia-entry-tool");
    expect(tool?.querySelector(".anvia-tool-status")?.textContent).toBe("Done");
    byLabel(tool as HTMLElement, "Show more").click();
    expect(tool?.querySelector(".anvia-tool-result")?.textContent === result).toBe(true);
  });

  it("as a call's arguments, leaves the call in the transcript", () => {
    const args = `{"x": ${nested(30_000)}}`;
    const { root } = mount([toolEntry("t1", { status: "done", arguments: args, result: "ok" })], status("success"));
    const tool = root.querySelector(".anvia-entry-tool");
    expect(tool?.querySelector(".anvia-tool-status")?.textContent).toBe("Done");
  });
});
