// A notice line ("Run cancelled: <reason>") with a long reason: a hook's
// `tool.cancel(<100 kB reason>)` showed it whole, a wall of text in the transcript. Folded when
// long, with "Show more", as an error entry and a tool's result are.
import { afterEach, describe, expect, it } from "vitest";
import { batch, buttons, byLabel, mount, status } from "./helpers";

afterEach(() => document.body.replaceChildren());

const REASON = "Run cancelled: " + "the refund policy forbids this, see section 4. ".repeat(2200);

describe("a notice entry", () => {
  it("is folded when long, and shown whole on Show more", () => {
    const { root } = mount([{ kind: "user", id: "u", text: "go" }, { kind: "notice", id: "n", text: REASON }], status("cancelled"));
    const entry = root.querySelector(".anvia-entry-notice") as HTMLElement;
    const text = () => entry.querySelector(".anvia-line-text")?.textContent ?? "";
    expect(REASON.length).toBeGreaterThan(100_000);
    expect(text().length).toBeLessThan(2_000);
    expect(text().startsWith("Run cancelled: the refund policy")).toBe(true);
    byLabel(entry, "Show more").click();
    expect(text() === REASON).toBe(true);
    byLabel(entry, "Show less").click();
    expect(text().length).toBeLessThan(2_000);
  });

  it("shows a short notice whole, without a fold, and folds it once it grows long", () => {
    const { model, root } = mount([{ kind: "notice", id: "n", text: "Run cancelled: stopped" }], status("cancelled"));
    const entry = root.querySelector(".anvia-entry-notice") as HTMLElement;
    expect(entry.querySelector(".anvia-line-text")?.textContent).toBe("Run cancelled: stopped");
    expect(buttons(entry)).toEqual([]);
    batch(model, { op: "patch", id: "n", changes: { text: REASON } });
    expect(entry.querySelector(".anvia-line-text")!.textContent!.length).toBeLessThan(2_000);
    expect(byLabel(entry, "Show more")).toBeTruthy();
  });
});
