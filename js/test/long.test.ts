import { afterEach, describe, expect, it, vi } from "vitest";
import type { Entry } from "../src/protocol";
import { EAGER_ENTRIES } from "../src/views/transcript";
import { batch, flushFrames, mount, toolEntry } from "./helpers";

afterEach(() => {
  document.body.replaceChildren();
  vi.restoreAllMocks();
});

/** `n` entries: a user prompt, then assistant messages and tool calls in turn. */
function longTranscript(n: number): Entry[] {
  const out: Entry[] = [{ kind: "user", id: "u0", text: "Check every item." }];
  for (let i = 1; out.length < n; i++) {
    out.push({ kind: "assistant", id: `a${i}`, turn: i, text: `Step **${i}**.` });
    if (out.length < n) out.push(toolEntry(`t${i}`, { turn: i, status: "done", result: `{"item": ${i}}` }));
  }
  return out;
}

const rows = (root: HTMLElement) => [...root.querySelectorAll<HTMLElement>(".anvia-transcript > .anvia-entry")];
const pending = (root: HTMLElement) => root.querySelectorAll(".anvia-entry-pending").length;

describe("a long transcript", () => {
  it("builds the newest entries at once and stands in for the older ones, in order", () => {
    const entries = longTranscript(130);
    const { root } = mount(entries);
    expect(rows(root)).toHaveLength(130);
    expect(pending(root)).toBe(130 - EAGER_ENTRIES);
    const last = rows(root).at(-1)!;
    expect(last.classList.contains("anvia-entry-pending")).toBe(false);
    // Stand-ins carry the entry's text, so the order and the words are there from the start.
    expect(rows(root)[1]!.textContent).toBe("Step **1**.");
    expect(rows(root)[2]!.textContent).toBe("issue_refund · Done");
    // Only a long list skips laying out what is out of view (content-visibility in the CSS).
    expect(root.querySelector(".anvia-transcript")!.classList.contains("anvia-long")).toBe(true);
  });

  it("builds the older entries when the page is idle", async () => {
    const { root } = mount(longTranscript(130));
    await vi.waitFor(() => expect(pending(root)).toBe(0), { timeout: 5000 });
    expect(rows(root)).toHaveLength(130);
    expect(rows(root)[1]!.querySelector("strong")?.textContent).toBe("1");
    expect(rows(root)[2]!.querySelector(".anvia-tool-result")?.textContent).toContain('"item": 1');
  });

  it("builds an older entry at once when it changes", () => {
    const { model, root } = mount(longTranscript(130));
    batch(model, { op: "patch", id: "t1", changes: { status: "error", is_error: true } });
    batch(model, { op: "append", id: "a1", field: "text", text: " More." });
    const [, a1, t1] = rows(root);
    expect(a1!.classList.contains("anvia-entry-pending")).toBe(false);
    expect(t1!.querySelector(".anvia-tool-status")?.textContent).toBe("Error");
  });

  it("builds an older entry that waits for an approval at once", () => {
    const entries = longTranscript(130);
    const pendingApproval = {
      id: "ap_1",
      status: "pending" as const,
      reason: "Check it.",
      args: {},
      decided_by: null,
      decided_at: null,
      decision_reason: null,
      edited_args: null,
    };
    entries[2] = toolEntry("t1", { turn: 1, status: "approval_required", approval: pendingApproval });
    const { root } = mount(entries);
    expect(rows(root)[2]!.classList.contains("anvia-entry-pending")).toBe(false);
    expect(rows(root)[2]!.querySelector("button")).not.toBeNull();
  });

  it("shows a short transcript whole at once", () => {
    const { root } = mount(longTranscript(EAGER_ENTRIES));
    expect(pending(root)).toBe(0);
    expect(root.querySelector(".anvia-transcript")!.classList.contains("anvia-long")).toBe(false);
  });

  it("builds the stand-ins that come near the visible part when the list scrolls, and no others", () => {
    const { root } = mount(longTranscript(400));
    const list = root.querySelector(".anvia-transcript") as HTMLElement;
    // A laid-out list 500 px high whose entries are 40 px each, scrolled to `scroll` px (first
    // to the bottom, as a fresh view is).
    const ROW = 40;
    let scroll = 400 * ROW - 500;
    vi.spyOn(Element.prototype, "getBoundingClientRect").mockImplementation(function (this: Element) {
      if (this === list) return new DOMRect(0, 100, 600, 500);
      const index = [...list.children].indexOf(this);
      return new DOMRect(0, 100 + index * ROW - scroll, 600, ROW);
    });
    // The first frame: the newest entries are built; so are the stand-ins within 800 px above
    // them (entries 367 to 375), not more.
    flushFrames();
    expect(pending(root)).toBe(367);
    expect(rows(root)[366]!.classList.contains("anvia-entry-pending")).toBe(true);
    expect(rows(root)[367]!.classList.contains("anvia-entry-pending")).toBe(false);

    scroll = 200 * ROW; // entries 200 to 212 in view
    list.dispatchEvent(new Event("scroll"));
    flushFrames();
    const built = rows(root)
      .map((row, index) => (row.classList.contains("anvia-entry-pending") ? -1 : index))
      .filter((index) => index >= 0 && index < 367);
    // Everything within 800 px above and below the visible 500 px: entries 179 to 232.
    expect(built[0]).toBe(179);
    expect(built.at(-1)).toBe(232);
    expect(built).toHaveLength(232 - 179 + 1);
    expect(rows(root)[199]!.querySelector("strong")?.textContent).toBe("100");
  });

  it("builds nothing on scroll while the list is not laid out (a hidden output)", () => {
    const { root } = mount(longTranscript(400));
    const list = root.querySelector(".anvia-transcript") as HTMLElement;
    list.dispatchEvent(new Event("scroll"));
    flushFrames();
    expect(pending(root)).toBe(400 - EAGER_ENTRIES);
  });
});
