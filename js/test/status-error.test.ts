// A run's error in the status line: its first line, cut short. The whole error is the
// transcript's error entry, folded when long (a provider's error can hold a whole HTML page: in
// full, the status line grew to thousands of pixels under the transcript, burying Stop and the
// rest, and the error entry as much inside it).
import { afterEach, describe, expect, it } from "vitest";
import { errorSummary, STATUS_ERROR_CHARS } from "../src/views/status";
import { buttons, byLabel, mount, status } from "./helpers";

afterEach(() => document.body.replaceChildren());

const PAGE = "Bad gateway: upstream said\n" + "<html><body>Bad gateway</body></html> ".repeat(1500);

describe("the status line's error", () => {
  it("is the error's first line, cut short, while the error entry keeps it whole", () => {
    const { root } = mount([{ kind: "user", id: "u", text: "go" }, { kind: "error", id: "e", text: PAGE }], status("error", { error: PAGE }));
    const meta = root.querySelector(".anvia-status-meta")?.textContent ?? "";
    expect(meta.startsWith("Bad gateway: upstream said…")).toBe(true);
    expect(meta.length).toBeLessThan(STATUS_ERROR_CHARS + 50);
    // The error entry folds it, as a tool's result, and shows it whole on "Show more".
    const entry = root.querySelector(".anvia-entry-error") as HTMLElement;
    const text = () => entry.querySelector(".anvia-line-text")?.textContent ?? "";
    expect(text().length).toBeLessThan(2_000);
    expect(text().startsWith("Bad gateway: upstream said\n<html>")).toBe(true);
    byLabel(entry, "Show more").click();
    expect(text() === PAGE).toBe(true);
  });

  it("entry shows a short error whole, without a fold", () => {
    const { root } = mount([{ kind: "error", id: "e", text: "boom\nat line 2" }], status("error", { error: "boom\nat line 2" }));
    const entry = root.querySelector(".anvia-entry-error") as HTMLElement;
    expect(entry.querySelector(".anvia-line-text")?.textContent).toBe("boom\nat line 2");
    expect(entry.querySelector("strong")?.textContent).toBe("Error: ");
    expect(buttons(entry)).toEqual([]);
  });

  it("keeps a short error whole and cuts a long line", () => {
    expect(errorSummary("Rate limited: retry in 20 s")).toBe("Rate limited: retry in 20 s");
    expect(errorSummary("  boom \n")).toBe("boom");
    const long = "x".repeat(STATUS_ERROR_CHARS * 3);
    expect(errorSummary(long)).toBe(`${"x".repeat(STATUS_ERROR_CHARS)}…`);
    // (never half of a surrogate pair)
    const emoji = `${"x".repeat(STATUS_ERROR_CHARS - 1)}\u{1F600}tail`;
    expect(errorSummary(emoji)).toBe(`${"x".repeat(STATUS_ERROR_CHARS - 1)}…`);
  });
});
