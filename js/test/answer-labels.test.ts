// An answered question's record shows each picked choice by the label the person clicked: the
// answer's `label` in the kernel's view of the record, which the saved copy shows too.
import { afterEach, expect, it } from "vitest";
import type { QuestionView } from "../src/protocol";
import { mount, status, toolEntry } from "./helpers";

afterEach(() => document.body.replaceChildren());

/** A form an MCP server asked: a boolean (Yes / No), an optional field with a default, and a
 * text field answered in words. */
const answered: QuestionView = {
  id: "q_1",
  status: "answered",
  declinable: true,
  questions: [
    { id: "confirm", question: "Delete the branch?", choices: [{ label: "Yes", value: "true" }, { label: "No", value: "false" }] },
    { id: "retries", question: "Retries", choices: [{ label: "Use the default (3)", value: "(blank)" }] },
    { id: "note", question: "Note", choices: [] },
  ],
  answers: [
    { questionId: "confirm", answer: "true", choice: "true", label: "Yes" },
    { questionId: "retries", answer: "(blank)", choice: "(blank)", label: "Use the default (3)" },
    { questionId: "note", answer: "true", custom: true, label: "true" },
  ],
};

it("shows a picked choice by its label, and a custom answer as typed", () => {
  const { root } = mount([toolEntry("t1", { status: "done", question: answered })], status("success"));
  const shown = [...root.querySelectorAll(".anvia-answers dd")].map((dd) => dd.textContent);
  expect(shown).toEqual(["Yes", "Use the default (3)", "true (custom answer)"]);
});
