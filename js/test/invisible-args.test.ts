// Invisible direction controls in a tool's arguments (a model may put U+202E in an address so
// that "bob\u202emoc.live@" reads as something else): the approval card and the tool entry show
// them as their JSON escapes, which mean the same value, so what a person approves reads as it is.
import { afterEach, describe, expect, it } from "vitest";
import type { ApprovalView, JsonObject } from "../src/protocol";
import { buttons, mount, status, toolEntry } from "./helpers";

afterEach(() => document.body.replaceChildren());

const INVISIBLES = ["\u202e", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069", "\u200b", "\u200e", "\u200f", "\u061c", "\ufeff", "\u2060"];
const escaped = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

function approval(args: JsonObject): ApprovalView {
  return {
    id: "ap_1",
    status: "pending",
    reason: "Send money?",
    args,
    decided_by: null,
    decided_at: null,
    decision_reason: null,
    edited_args: null,
  };
}

describe("invisible controls in arguments", () => {
  for (const c of INVISIBLES) {
    it(`shows U+${c.charCodeAt(0).toString(16).toUpperCase()} as its escape in the approval card and the tool entry`, () => {
      const args = { to: `bob${c}moc.evil@` };
      const m = mount(
        [toolEntry("t1", { status: "approval_required", arguments: JSON.stringify(args), approval: approval(args) })],
        status("waiting"),
      );
      const panel = m.root.querySelector('[role="alertdialog"]') as HTMLElement;
      const shown = panel.querySelector(".anvia-approval-args")?.textContent ?? "";
      expect(shown).not.toContain(c);
      expect(shown).toContain(escaped(c));
      expect(JSON.parse(shown)).toEqual(args); // the same value
      const entryArgs = m.root.querySelector(".anvia-tool-args")?.textContent ?? "";
      expect(entryArgs).not.toContain(c);
      // Editing starts from the shown text, and approving it sends the model's value back.
      buttons(panel).find((b) => b.textContent === "Edit arguments")!.click();
      const editor = panel.querySelector("textarea") as HTMLTextAreaElement;
      expect(editor.value).not.toContain(c);
      expect(JSON.parse(editor.value)).toEqual(args);
    });
  }

  it("keeps the joiners emoji and some scripts need", () => {
    const args = { note: "family \u{1F468}\u200d\u{1F469}\u200d\u{1F467}, \u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645" };
    const m = mount([toolEntry("t1", { status: "approval_required", approval: approval(args) })], status("waiting"));
    const shown = m.root.querySelector(".anvia-approval-args")?.textContent ?? "";
    expect(shown).toContain(args.note);
  });
});
