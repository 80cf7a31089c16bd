// While a decision is on its way the interaction panel disables the form's controls (not a fold's
// "Show more"); a refusal enables them again as the form had them, and Enter on the last question
// submits only what may be submitted.
import { afterEach, describe, expect, it } from "vitest";
import type { ApprovalView, QuestionView } from "../src/protocol";
import { buttons, byLabel, byPlaceholder, mount, status, tick, toolEntry, type } from "./helpers";

afterEach(() => document.body.replaceChildren());

const approval: ApprovalView = {
  id: "ap_1",
  status: "pending",
  reason: "Check this refund. ".repeat(100),
  args: { order_id: "A-1" },
  decided_by: null,
  decided_at: null,
  decision_reason: null,
  edited_args: null,
};

const question: QuestionView = {
  id: "q_1",
  status: "pending",
  questions: [
    { id: "p", question: "What priority?", choices: [{ label: "High", value: "high" }] },
    { id: "c", question: "Which channel?", choices: [{ label: "Email", value: "email" }] },
  ],
  answers: [],
  declinable: true,
};

const controls = (root: ParentNode) => [...root.querySelectorAll<HTMLInputElement | HTMLButtonElement | HTMLTextAreaElement>("input, textarea, button")];

describe("a decision on its way", () => {
  it("disables every control of an approval but its folds' Show more", () => {
    const { root } = mount([toolEntry("t1", { status: "approval_required", approval })], status("waiting"));
    const panel = root.querySelector('[role="alertdialog"]') as HTMLElement;
    const more = byLabel(panel, "Show more");
    byLabel(panel, "Approve").click();
    const disabled = controls(panel).filter((c) => c.disabled);
    expect(disabled.map((c) => c.textContent || c.className)).toEqual([
      "Edit arguments",
      "anvia-approval-editor",
      "anvia-input anvia-reject-reason",
      "anvia-always-allow",
      "Approve",
      "Reject",
    ]);
    expect(more.disabled).toBe(false);
    more.click();
    expect(byLabel(panel, "Show less")).toBe(more);
  });

  it("enables a refused question's controls as they were: Back on the first question and Submit stay off", async () => {
    const { model, root } = mount([toolEntry("t1", { tool_name: "ask_question", status: "input_required", question })], status("waiting"));
    const panel = root.querySelector(".anvia-question") as HTMLElement;
    const before = controls(panel).map((c) => c.disabled);
    expect(before).toEqual([false, false, true, false, true, false]); // High, custom, Back, Next, Submit, Decline
    byLabel(panel, "Decline").click();
    expect(controls(panel).every((c) => c.disabled)).toBe(true);
    model.reply("question_decline", false, "Question q_1 is already answered");
    await tick();
    expect(controls(panel).map((c) => c.disabled)).toEqual(before);
    expect(buttons(panel).map((b) => b.textContent)).toEqual(["High", "Back", "Next", "Submit answers", "Decline"]);
  });

  it("submits with Enter on the last question only once every question has an answer", () => {
    const { model, root } = mount([toolEntry("t1", { tool_name: "ask_question", status: "input_required", question })], status("waiting"));
    const panel = root.querySelector(".anvia-question") as HTMLElement;
    const custom = byPlaceholder(panel, "Type a custom answer");
    const enter = () => custom.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    byLabel(panel, "Next").click();
    type(custom, "By phone");
    enter();
    expect(model.ofType("question_answers")).toHaveLength(0); // the first question has no answer
    byLabel(panel, "Back").click();
    byLabel(panel, "High").click();
    enter();
    expect(model.last("question_answers").answers).toEqual([
      { questionId: "p", answer: "high", choice: "high" },
      { questionId: "c", answer: "By phone", custom: true },
    ]);
  });
});
