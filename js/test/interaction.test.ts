// The one interaction path (views/interaction.ts): what approvals and questions share.
import { afterEach, describe, expect, it } from "vitest";
import { type ApprovalView, type QuestionView, validatePageMessage } from "../src/protocol";
import { interactionsOf, waitsForSomeone } from "../src/views/interaction";
import { batch, buttons, byLabel, byPlaceholder, mount, status, tick, toolEntry, type } from "./helpers";

afterEach(() => document.body.replaceChildren());

const approval: ApprovalView = {
  id: "ap_1",
  status: "pending",
  reason: "Check the refund.",
  args: { order_id: "A-1" },
  decided_by: null,
  decided_at: null,
  decision_reason: null,
  edited_args: null,
};

const question: QuestionView = {
  id: "q_1",
  status: "pending",
  questions: [{ id: "p", question: "What priority?", choices: [{ label: "High", value: "high" }] }],
  answers: [],
};

describe("interactions of a tool entry", () => {
  it("lists the approval first, then the question, and says which wait for someone", () => {
    const both = toolEntry("t", { approval, question }) as Extract<ReturnType<typeof toolEntry>, { kind: "tool" }>;
    expect(interactionsOf(both).map((i) => `${i.kind}:${i.view.id}`)).toEqual(["approval:ap_1", "question:q_1"]);
    expect(waitsForSomeone(both)).toBe(true);
    expect(waitsForSomeone(toolEntry("t", { approval: { ...approval, status: "approved" } }))).toBe(false);
    expect(waitsForSomeone(toolEntry("t", { question: { ...question, status: "answered" } }))).toBe(false);
    expect(waitsForSomeone(toolEntry("t", { question: { ...question, status: "answered" }, approval }))).toBe(true);
    expect(waitsForSomeone({ kind: "user", id: "u", text: "pending" })).toBe(false);
  });

  it("shows both panels of one entry, each sending its own decision as a valid page message", async () => {
    const { model, root } = mount([toolEntry("t1", { status: "approval_required", approval, question })], status("waiting"));
    const entry = root.querySelector(".anvia-entry-tool") as HTMLDetailsElement;
    expect(entry.open).toBe(true);
    const slots = [...entry.querySelectorAll(".anvia-interaction > *")].map((e) => e.className);
    expect(slots).toEqual(["anvia-approval-slot", "anvia-question-slot"]);

    byLabel(root, "Approve").click();
    byLabel(root, "High").click();
    byLabel(root, "Submit answers").click();
    const sent = model.sent.filter((m) => m.type !== "sync");
    expect(sent.map((m) => m.type)).toEqual(["approval_decision", "question_answers"]);
    for (const m of sent) expect(validatePageMessage(m).ok).toBe(true);
    expect(sent[0]).toMatchObject({ approval_id: "ap_1", approved: true, reason: null, edited_args: null, always_allow: false });
    expect(sent[1]).toMatchObject({ question_id: "q_1", answers: [{ questionId: "p", answer: "high", choice: "high" }] });

    // Each form is busy on its own until its reply; a refusal re-enables only that form.
    model.kernel({ type: "reply", request_id: sent[1]!.request_id, ok: false, error: "Question q_1 is already answered" });
    await tick();
    const questionSlot = entry.querySelector(".anvia-question-slot") as HTMLElement;
    const approvalSlot = entry.querySelector(".anvia-approval-slot") as HTMLElement;
    expect(byLabel(questionSlot, "Submit answers").disabled).toBe(false);
    expect(byLabel(approvalSlot, "Approve").disabled).toBe(true);
    const refusal = questionSlot.querySelector('[role="alert"].anvia-question-error') as HTMLElement;
    expect(refusal.hidden).toBe(false);
    expect(refusal.textContent).toBe("The answers were not accepted: Question q_1 is already answered");
    expect((approvalSlot.querySelector(".anvia-approval-error") as HTMLElement).hidden).toBe(true);
  });

  it("sends one decision however often the buttons are pressed while it is on its way", () => {
    const { model, root } = mount([toolEntry("t1", { status: "approval_required", approval })], status("waiting"));
    const approve = byLabel(root, "Approve");
    const reject = byLabel(root, "Reject");
    approve.click();
    // A disabled button ignores clicks in a browser; call the handlers as a stale event would.
    approve.disabled = reject.disabled = false;
    approve.click();
    reject.click();
    expect(model.ofType("approval_decision")).toHaveLength(1);
  });

  it("keeps a pending form across updates of its interaction, and draws a new one for a new interaction", () => {
    const { model, root } = mount([toolEntry("t1", { status: "approval_required", approval })], status("waiting"));
    const form = root.querySelector('[role="alertdialog"]');
    batch(model, { op: "patch", id: "t1", changes: { approval: { ...approval, reason: "Check it again." } } });
    expect(root.querySelector('[role="alertdialog"]')).toBe(form);
    batch(model, { op: "patch", id: "t1", changes: { approval: { ...approval, id: "ap_2" } } });
    const fresh = root.querySelector('[role="alertdialog"]');
    expect(fresh).not.toBe(form);
    byLabel(root, "Approve").click();
    expect(model.last("approval_decision").approval_id).toBe("ap_2");
  });

  it("turns a form into the record of the decision, with no controls left", () => {
    const { model, root } = mount([toolEntry("t1", { status: "input_required", question })], status("waiting"));
    batch(model, {
      op: "patch",
      id: "t1",
      changes: { status: "done", question: { ...question, status: "answered", answers: [{ questionId: "p", answer: "high", label: "high" }] } },
    });
    const slot = root.querySelector(".anvia-question-slot") as HTMLElement;
    expect(slot.textContent).toBe("AnsweredWhat priority?high");
    expect(buttons(slot)).toHaveLength(0);
  });
});

const controls = (root: ParentNode) => [...root.querySelectorAll<HTMLInputElement | HTMLButtonElement | HTMLTextAreaElement>("input, textarea, button")];

// While a decision is on its way the panel disables the form's controls (not a fold's "Show
// more"); a refusal enables them again as the form had them.
describe("a decision on its way", () => {
  const longReason: ApprovalView = { ...approval, reason: "Check this refund. ".repeat(100) };
  const twoQuestions: QuestionView = {
    ...question,
    questions: [question.questions[0]!, { id: "c", question: "Which channel?", choices: [{ label: "Email", value: "email" }] }],
    declinable: true,
  };

  it("disables every control of an approval but its folds' Show more", () => {
    const { root } = mount([toolEntry("t1", { status: "approval_required", approval: longReason })], status("waiting"));
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
    const { model, root } = mount([toolEntry("t1", { tool_name: "ask_question", status: "input_required", question: twoQuestions })], status("waiting"));
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
    const { model, root } = mount([toolEntry("t1", { tool_name: "ask_question", status: "input_required", question: twoQuestions })], status("waiting"));
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
