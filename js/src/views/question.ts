// What is particular to a question (ask_question), drawn by the interaction panel
// (interaction.ts): the pending form, one question at a time, choices as buttons that record and
// advance, a custom answer instead of the choice (but on a question only its choices answer,
// `allowCustom: false`, which has no custom answer box), Back / Next, "n/N answered", and "Submit
// answers" once every question has an answer; a question an MCP server asked (`declinable`) also
// has "Decline", which tells the server no; and the record of the answers once settled.
import { button, h, nextDomId } from "../dom";
import { type Answer, type Question, type QuestionView, TOOL_STATUS_LABELS } from "../protocol";
import { showOverrides } from "./fold";
import type { Form, Submit } from "./interaction";

/** The state of a question in words: a closed one's as its tool entry says it ("Timed out"). */
const STATUS_TEXT: Record<QuestionView["status"], string> = {
  ...TOOL_STATUS_LABELS,
  pending: "Waiting for answers",
  answered: "Answered",
};

/** Whether a custom answer may answer `question`: not when the kernel takes only its choices
 * (`allowCustom: false`, a field of fixed values of an MCP server's form). A view without the
 * field (an older kernel's, a saved notebook's) allows one, and so does a question without choices
 * (nothing else could answer it). */
const allowsCustom = (question: Question): boolean => question.allowCustom !== false || question.choices.length === 0;

/** Whether `text` shows nothing: blanks and invisible format characters only (a zero-width
 * space, which `trim()` keeps), as the kernel reads an answer (it refuses one as empty). */
const blank = (text: string): boolean => /^[\s\p{Cf}\x1c-\x1f\x85]*$/u.test(text);

/** Closed by the person's Decline (a question an MCP server asked), not by Stop or the runtime. */
const declined = (q: QuestionView): boolean => q.status === "cancelled" && q.decided_by === "human";

export function questionRecord(q: QuestionView): HTMLElement {
  // Each answer under its question's text.
  const answers = q.answers.flatMap((a) => {
    const question = q.questions.find((x) => x.id === a.questionId);
    return [
      h("dt", {}, showOverrides(question?.question ?? a.questionId)),
      h("dd", {}, showOverrides(a.label), a.custom ? h("span", { class: "anvia-muted" }, " (custom answer)") : null),
    ];
  });
  return h(
    "div",
    { class: `anvia-question anvia-question-${q.status}` },
    h("div", { class: "anvia-question-state" }, declined(q) ? "Declined" : STATUS_TEXT[q.status]),
    answers.length > 0 ? h("dl", { class: "anvia-answers" }, ...answers) : null,
  );
}

export function questionForm(q: QuestionView, submit: Submit): Form {
  // What the person chose or typed for each question, by the question's place.
  const drafts: { choice?: string; custom: string }[] = q.questions.map(() => ({ custom: "" }));
  const total = q.questions.length;
  let index = 0;

  const progress = h("div", { class: "anvia-question-progress" });
  // The question names its choices and describes the custom answer box, so that a screen reader
  // says what they answer ("Which channel?"), not only "Choices" or "Custom answer".
  const textId = nextDomId("question-text");
  const text = h("div", { class: "anvia-question-text", id: textId });
  const choices = h("div", { class: "anvia-choices", role: "group", "aria-labelledby": textId });
  const custom = h("input", {
    type: "text",
    class: "anvia-input anvia-custom-answer",
    placeholder: "Type a custom answer",
    "aria-label": "Custom answer",
    "aria-describedby": textId,
  });
  const back = button("Back", () => go(index - 1));
  const next = button("Next", () => go(index + 1));
  const count = h("span", { class: "anvia-question-count" });
  const send = button("Submit answers", () => {
    const all = answers();
    if (all.every((a) => a !== null)) submit({ type: "question_answers", question_id: q.id, answers: all });
  }, { class: "anvia-button anvia-primary" });
  const decline = q.declinable ? button("Decline", () => submit({ type: "question_decline", question_id: q.id })) : null;

  // Each question's answer, if it has one: its custom text (where a custom answer may answer
  // it; typing one unticks the choice, choosing one clears it), else its chosen value.
  const answers = (): (Answer | null)[] =>
    q.questions.map((question, i) => {
      const questionId = question.id;
      const { choice, custom } = drafts[i]!;
      if (!blank(custom) && allowsCustom(question)) return { questionId, answer: custom.trim(), custom: true };
      return choice ? { questionId, answer: choice, choice } : null;
    });

  function go(i: number): void {
    index = Math.max(0, Math.min(total - 1, i));
    render();
  }

  function refreshCounts(): void {
    const n = answers().filter((a) => a !== null).length;
    count.textContent = `${n}/${total} answered`;
    send.disabled = n < total;
    back.disabled = index === 0;
    next.disabled = index >= total - 1;
  }

  /** Focus where the shown question is answered: its chosen choice, else its first, else the box. */
  function focusAnswer(): void {
    const pressed = choices.querySelector<HTMLElement>('[aria-pressed="true"]');
    (pressed ?? (choices.firstElementChild as HTMLElement | null) ?? custom).focus();
  }

  function render(): void {
    const cur = q.questions[index]!;
    const d = drafts[index]!;
    progress.textContent = `Question ${index + 1} of ${total}`;
    text.textContent = showOverrides(cur.question);
    choices.replaceChildren(
      ...cur.choices.map((c) => {
        const chosen = d.choice === c.value;
        const b = button(showOverrides(c.label), (ev) => {
          // The later clicks of a double click land on what took this choice's place: the next
          // question's choice under the pointer, which they must not answer unread.
          if (ev.detail > 1) return;
          d.choice = c.value;
          d.custom = ""; // (the choice clicked last is the answer, as its tick says)
          go(index + 1); // the last question stays
          focusAnswer();
        }, {
          class: chosen ? "anvia-button anvia-choice anvia-choice-selected" : "anvia-button anvia-choice",
          "aria-pressed": String(chosen),
        });
        // The chosen one is filled and ticked, unlike a focus ring (the tick is for the eye: the
        // pressed state says it to assistive tech).
        if (chosen) b.prepend(h("span", { class: "anvia-choice-check", "aria-hidden": "true" }, "\u2713"));
        return b;
      }),
    );
    // One box for all the questions, hidden on one that only its choices answer.
    custom.hidden = !allowsCustom(cur);
    custom.value = d.custom;
    refreshCounts();
  }

  custom.addEventListener("input", () => {
    const d = drafts[index]!;
    d.custom = custom.value;
    if (!blank(d.custom) && d.choice !== undefined) {
      d.choice = undefined; // (the text typed is the answer: no choice stays ticked)
      const tick = choices.querySelector('[aria-pressed="true"]');
      tick?.setAttribute("aria-pressed", "false");
      tick?.classList.remove("anvia-choice-selected");
      tick?.querySelector(".anvia-choice-check")?.remove();
    }
    refreshCounts();
  });
  custom.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter" || ev.isComposing || ev.keyCode === 229) return;
    ev.preventDefault();
    if (index < total - 1) {
      go(index + 1);
      if (custom.hidden) focusAnswer(); // the next question takes only its choices
    } else send.click(); // nothing while Submit is disabled
  });

  render();
  const el = h(
    "div",
    { class: "anvia-question anvia-question-pending", role: "group", "aria-label": "Input required" },
    progress,
    text,
    choices,
    custom,
    h("div", { class: "anvia-row anvia-question-nav" }, back, next, count, send, decline),
  );
  return { el, refresh: refreshCounts };
}
