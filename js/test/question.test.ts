import { afterEach, describe, expect, it } from "vitest";
import type { QuestionView } from "../src/protocol";
import { batch, buttons, byLabel, byPlaceholder, fixture, isShown, mount, status, tick, toolEntry, type } from "./helpers";

afterEach(() => document.body.replaceChildren());

const question: QuestionView = {
  id: "q_1",
  status: "pending",
  questions: [
    { id: "priority", question: "What priority?", choices: [{ label: "High", value: "high" }, { label: "Low", value: "low" }] },
    { id: "channel", question: "Which channel?", choices: [{ label: "Email", value: "email" }, { label: "Phone", value: "phone" }] },
    { id: "note", question: "Operator note?", choices: [{ label: "None", value: "none" }] },
  ],
  answers: [],
};

function setup(q: QuestionView = question) {
  const m = mount([toolEntry("t2", { tool_name: "ask_question", status: "input_required", question: q })], status("waiting"));
  const panel = () => m.root.querySelector(".anvia-question") as HTMLElement;
  const progress = () => panel().querySelector(".anvia-question-progress")?.textContent;
  const text = () => panel().querySelector(".anvia-question-text")?.textContent;
  const count = () => panel().querySelector(".anvia-question-count")?.textContent;
  const custom = () => byPlaceholder(panel(), "Type a custom answer");
  return { ...m, panel, progress, text, count, custom };
}

describe("question panel", () => {
  it("shows one question at a time with its choices and a custom input after them", () => {
    const q = setup();
    expect(q.progress()).toBe("Question 1 of 3");
    expect(q.text()).toBe("What priority?");
    expect(q.count()).toBe("0/3 answered");
    expect(buttons(q.panel()).map((b) => b.textContent)).toEqual(["High", "Low", "Back", "Next", "Submit answers"]);
    const choices = q.panel().querySelector(".anvia-choices")!;
    expect(choices.compareDocumentPosition(q.custom()) & Node.DOCUMENT_POSITION_FOLLOWING).toBeTruthy();
    expect(byLabel(q.panel(), "Back").disabled).toBe(true);
    expect(byLabel(q.panel(), "Submit answers").disabled).toBe(true);
  });

  it("records a choice and advances; Back and Next move between questions", () => {
    const q = setup();
    byLabel(q.panel(), "High").click();
    expect(q.progress()).toBe("Question 2 of 3");
    expect(q.text()).toBe("Which channel?");
    expect(q.count()).toBe("1/3 answered");
    byLabel(q.panel(), "Back").click();
    expect(q.progress()).toBe("Question 1 of 3");
    expect(byLabel(q.panel(), "High").getAttribute("aria-pressed")).toBe("true");
    expect(byLabel(q.panel(), "Low").getAttribute("aria-pressed")).toBe("false");
    // Marked for the eye too: filled and ticked (the tick is not read out), the others not.
    expect(byLabel(q.panel(), "High").classList.contains("anvia-choice-selected")).toBe(true);
    expect(byLabel(q.panel(), "High").querySelector('.anvia-choice-check[aria-hidden="true"]')?.textContent).toBe("\u2713");
    expect(byLabel(q.panel(), "Low").classList.contains("anvia-choice-selected")).toBe(false);
    expect(byLabel(q.panel(), "Low").querySelector(".anvia-choice-check")).toBeNull();
    byLabel(q.panel(), "Next").click();
    byLabel(q.panel(), "Next").click();
    expect(q.progress()).toBe("Question 3 of 3");
    expect(byLabel(q.panel(), "Next").disabled).toBe(true);
    expect(q.count()).toBe("1/3 answered");
  });

  it("enables Submit only when every question has an answer, and sends them with questionId", async () => {
    const q = setup();
    const submit = () => byLabel(q.panel(), "Submit answers");
    byLabel(q.panel(), "High").click();
    expect(submit().disabled).toBe(true);
    byLabel(q.panel(), "Phone").click();
    expect(submit().disabled).toBe(true);
    expect(q.progress()).toBe("Question 3 of 3");
    type(q.custom(), "  Customer is a VIP ");
    expect(q.count()).toBe("3/3 answered");
    expect(submit().disabled).toBe(false);
    type(q.custom(), "   ");
    expect(submit().disabled).toBe(true);
    byLabel(q.panel(), "None").click(); // last question: records, stays
    expect(q.progress()).toBe("Question 3 of 3");
    expect(submit().disabled).toBe(false);
    submit().click();
    expect(q.model.last("question_answers")).toEqual({
      type: "question_answers",
      request_id: expect.any(String),
      question_id: "q_1",
      answers: [
        { questionId: "priority", answer: "high", choice: "high" },
        { questionId: "channel", answer: "phone", choice: "phone" },
        { questionId: "note", answer: "none", choice: "none" },
      ],
    });
    for (const b of buttons(q.panel())) expect(b.disabled).toBe(true);
    expect(q.custom().disabled).toBe(true);
  });

  it("lets non-empty custom text override the choice", () => {
    const q = setup();
    byLabel(q.panel(), "High").click();
    byLabel(q.panel(), "Back").click();
    type(q.custom(), "Urgent, but not critical");
    byLabel(q.panel(), "Next").click();
    expect(q.custom().value).toBe(""); // each question keeps its own custom text
    byLabel(q.panel(), "Email").click();
    type(q.custom(), "note text");
    byLabel(q.panel(), "Back").click();
    byLabel(q.panel(), "Back").click();
    expect(q.custom().value).toBe("Urgent, but not critical");
    byLabel(q.panel(), "Next").click();
    byLabel(q.panel(), "Next").click();
    byLabel(q.panel(), "Submit answers").click();
    expect(q.model.last("question_answers").answers).toEqual([
      { questionId: "priority", answer: "Urgent, but not critical", custom: true },
      { questionId: "channel", answer: "email", choice: "email" },
      { questionId: "note", answer: "note text", custom: true },
    ]);
  });

  it("sends the choice clicked after custom text was typed, and unticks a choice once text is typed", () => {
    // (the typed text was sent while the clicked choice showed ticked)
    const q = setup({ ...question, questions: [question.questions[0]!] });
    type(q.custom(), "my own words");
    byLabel(q.panel(), "Low").click();
    expect(q.custom().value).toBe("");
    expect(byLabel(q.panel(), "Low").getAttribute("aria-pressed")).toBe("true");
    byLabel(q.panel(), "Submit answers").click();
    expect(q.model.last("question_answers").answers).toEqual([{ questionId: "priority", answer: "low", choice: "low" }]);
    const again = setup({ ...question, id: "q_2", questions: [question.questions[0]!] });
    byLabel(again.panel(), "High").click();
    type(again.custom(), "Urgent");
    expect(byLabel(again.panel(), "High").getAttribute("aria-pressed")).toBe("false");
    expect(byLabel(again.panel(), "High").classList.contains("anvia-choice-selected")).toBe(false);
    expect(byLabel(again.panel(), "High").querySelector(".anvia-choice-check")).toBeNull();
  });

  it("does not count a custom answer of invisible characters, as the kernel refuses it", () => {
    // (a zero-width space survives trim(): "3/3 answered", then the kernel said the answer was empty)
    const q = setup({ ...question, questions: [question.questions[0]!] });
    type(q.custom(), "  \u200b\u2060\u0085\u001c ");
    expect(q.count()).toBe("0/1 answered");
    expect(byLabel(q.panel(), "Submit answers").disabled).toBe(true);
  });

  it("re-enables the form with an error when the answers are refused", async () => {
    const q = setup({ ...question, questions: [question.questions[0]!] });
    expect(q.progress()).toBe("Question 1 of 1");
    byLabel(q.panel(), "Low").click();
    byLabel(q.panel(), "Submit answers").click();
    q.model.reply("question_answers", false, "Question q_1 is already answered");
    await tick();
    expect(byLabel(q.panel(), "Submit answers").disabled).toBe(false);
    expect(byLabel(q.panel(), "Low").disabled).toBe(false);
    expect(q.panel().querySelector(".anvia-error-text")?.textContent).toContain("already answered");
  });

  it("shows the answers once answered, and the cancelled and timed-out states", () => {
    const outcomes = fixture("batch_patch_question_outcomes.json") as { ops: { changes: { question: QuestionView } }[] }[];
    const q = setup();
    const seen: string[] = [];
    for (const msg of outcomes) {
      batch(q.model, ...msg.ops);
      seen.push(q.panel().querySelector(".anvia-question-state")?.textContent ?? "");
      expect(buttons(q.panel())).toHaveLength(0);
      if (seen.length === 1) {
        const text = q.panel().textContent ?? "";
        expect(text).toContain("What priority should this escalation have?");
        expect(text).toContain("High"); // (the label the person clicked, not the value "high")
        expect(text).toContain("Customer is a VIP (custom answer)");
      }
    }
    expect(seen).toEqual(["Answered", "Cancelled", "Timed out"]);
    expect(q.root.querySelector(".anvia-tool-status")?.textContent).toBe("Timed out");
  });

  it("has no Decline for ask_question's questions", () => {
    const q = setup();
    expect(buttons(q.panel()).map((b) => b.textContent)).not.toContain("Decline");
  });

  it("offers Decline on a question an MCP server asked, and sends question_decline", async () => {
    const q = setup({ ...question, declinable: true });
    expect(buttons(q.panel()).map((b) => b.textContent)).toEqual(["High", "Low", "Back", "Next", "Submit answers", "Decline"]);
    const decline = byLabel(q.panel(), "Decline");
    expect(decline.disabled).toBe(false); // no answer needed to decline
    decline.click();
    expect(q.model.last("question_decline")).toEqual({ type: "question_decline", request_id: expect.any(String), question_id: "q_1" });
    for (const b of buttons(q.panel())) expect(b.disabled).toBe(true);
    q.model.reply("question_decline", false, "Question q_1 is already answered");
    await tick();
    expect(byLabel(q.panel(), "Decline").disabled).toBe(false);
    expect(q.panel().querySelector(".anvia-error-text")?.textContent).toContain("already answered");
  });

  it("shows a declined question as Declined, a stopped one as Cancelled", () => {
    const declinedView: QuestionView = { ...question, declinable: true, status: "cancelled", decided_by: "human", decided_via: "widget" };
    let q = setup(declinedView);
    expect(q.panel().querySelector(".anvia-question-state")?.textContent).toBe("Declined");
    expect(buttons(q.panel())).toHaveLength(0);
    document.body.replaceChildren();
    q = setup({ ...declinedView, decided_by: "stop", decided_via: null });
    expect(q.panel().querySelector(".anvia-question-state")?.textContent).toBe("Cancelled");
  });

  describe("a question only its choices answer (allowCustom: false)", () => {
    // An MCP server's form: an enum field and a Yes/No one take only their values, a number
    // field only a typed answer.
    const form: QuestionView = {
      id: "q_form",
      status: "pending",
      declinable: true,
      questions: [
        { id: "size", question: "Which size?", choices: [{ label: "Small", value: "small" }, { label: "Large", value: "large" }], allowCustom: false },
        { id: "guests", question: "How many guests?", choices: [] },
        { id: "outdoor", question: "Outdoors?", choices: [{ label: "Yes", value: "true" }, { label: "No", value: "false" }], allowCustom: false },
      ],
      answers: [],
    };
    const shown = (q: ReturnType<typeof setup>) => isShown(q.custom());

    it("shows no custom answer box, only the choices", () => {
      const q = setup(form);
      expect(q.text()).toBe("Which size?");
      expect(shown(q)).toBe(false);
      expect(buttons(q.panel()).map((b) => b.textContent)).toEqual(["Small", "Large", "Back", "Next", "Submit answers", "Decline"]);
      byLabel(q.panel(), "Next").click();
      expect(q.text()).toBe("How many guests?");
      expect(shown(q)).toBe(true); // a field with no choices is answered in the box
      byLabel(q.panel(), "Next").click();
      expect(q.text()).toBe("Outdoors?");
      expect(shown(q)).toBe(false);
    });

    it("is answered by its choices, and the answers sent are choices", () => {
      const q = setup(form);
      byLabel(q.panel(), "Large").click();
      expect(q.text()).toBe("How many guests?");
      type(q.custom(), "4");
      byLabel(q.panel(), "Next").click();
      byLabel(q.panel(), "No").click(); // the last question stays
      expect(byLabel(q.panel(), "No").getAttribute("aria-pressed")).toBe("true");
      expect(q.count()).toBe("3/3 answered");
      byLabel(q.panel(), "Submit answers").click();
      expect(q.model.last("question_answers").answers).toEqual([
        { questionId: "size", answer: "large", choice: "large" },
        { questionId: "guests", answer: "4", custom: true },
        { questionId: "outdoor", answer: "false", choice: "false" },
      ]);
    });

    it("keeps the keyboard on the choices: focus follows the choice, Enter in the box moves to them", () => {
      const q = setup(form);
      byLabel(q.panel(), "Small").focus();
      byLabel(q.panel(), "Small").click();
      expect(q.text()).toBe("How many guests?");
      expect(document.activeElement).toBe(q.custom()); // no choices: the box
      type(q.custom(), "2");
      q.custom().dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
      expect(q.text()).toBe("Outdoors?");
      expect(shown(q)).toBe(false);
      expect(document.activeElement).toBe(byLabel(q.panel(), "Yes")); // not lost with the hidden box
      byLabel(q.panel(), "Back").click();
      byLabel(q.panel(), "Back").click();
      expect(byLabel(q.panel(), "Small").getAttribute("aria-pressed")).toBe("true");
      byLabel(q.panel(), "Small").click(); // choosing again moves on, focus on the next answer
      expect(document.activeElement).toBe(q.custom());
      expect(q.custom().value).toBe("2");
    });

    it("sends no custom text for it, even one typed before the box was hidden", () => {
      // A text left in the box's draft (say, a view without the field, then with it) never
      // answers a question that takes only its choices: the choice does, or nothing.
      const q = setup({ ...form, questions: [form.questions[0]!] });
      type(q.custom(), "medium");
      expect(q.count()).toBe("0/1 answered");
      expect(byLabel(q.panel(), "Submit answers").disabled).toBe(true);
      byLabel(q.panel(), "Small").click();
      byLabel(q.panel(), "Submit answers").click();
      expect(q.model.last("question_answers").answers).toEqual([{ questionId: "size", answer: "small", choice: "small" }]);
    });

    it("a view without the field, or allowCustom true, shows the box as before", () => {
      const strip = ({ allowCustom: _a, ...rest }: QuestionView["questions"][number]) => rest;
      let q = setup({ ...form, questions: form.questions.map(strip) });
      expect(shown(q)).toBe(true);
      document.body.replaceChildren();
      q = setup({ ...form, questions: form.questions.map((x) => ({ ...x, allowCustom: true })) });
      expect(shown(q)).toBe(true);
    });

    it("a question with no choices keeps its box even if the view says allowCustom: false", () => {
      const q = setup({ ...form, questions: [{ id: "n", question: "Name?", choices: [], allowCustom: false }] });
      expect(shown(q)).toBe(true);
      type(q.custom(), "Ada");
      expect(q.count()).toBe("1/1 answered");
    });

    it("the shared fixture's MCP form question hides the box on its closed fields", () => {
      const [msg] = fixture("batch_patch_mcp_form_question.json") as { ops: { id: string; changes: { question: QuestionView } }[] }[];
      const view = msg!.ops[0]!.changes.question;
      const q = setup(view);
      const seen: boolean[] = [];
      for (const _ of view.questions) {
        seen.push(shown(q));
        byLabel(q.panel(), "Next").click();
      }
      expect(seen).toEqual(view.questions.map((x) => x.allowCustom !== false || x.choices.length === 0));
      expect(seen).toContain(false);
      expect(seen).toContain(true);
    });
  });

  it("Enter in the custom input moves on, but not while composing", () => {
    const q = setup();
    type(q.custom(), "P1");
    q.custom().dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", isComposing: true, bubbles: true }));
    expect(q.progress()).toBe("Question 1 of 3");
    q.custom().dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
    expect(q.progress()).toBe("Question 2 of 3");
  });
});
