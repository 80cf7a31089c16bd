// A double click on a choice: its first click picks the choice and shows the next question, whose
// choice now sits under the pointer; the second click (the browser's click count 2) must not
// answer that question too, which the person has not read.
import { afterEach, expect, it } from "vitest";
import type { QuestionView } from "../src/protocol";
import { byLabel, mount, status, toolEntry } from "./helpers";

afterEach(() => document.body.replaceChildren());

const question: QuestionView = {
  id: "q_1",
  status: "pending",
  questions: [
    { id: "priority", question: "What priority?", choices: [{ label: "High", value: "high" }, { label: "Low", value: "low" }] },
    { id: "channel", question: "Which channel?", choices: [{ label: "Email", value: "email" }, { label: "Phone", value: "phone" }] },
  ],
  answers: [],
};

/** A click as the browser sends it, the `count`th of a quick series at one place. */
const clickOf = (count: number): MouseEvent => new MouseEvent("click", { bubbles: true, cancelable: true, detail: count });

it("answers only the question whose choice was double-clicked", () => {
  const { root } = mount([toolEntry("t1", { tool_name: "ask_question", status: "input_required", question })], status("waiting"));
  const panel = () => root.querySelector(".anvia-question") as HTMLElement;
  const text = () => panel().querySelector(".anvia-question-text")?.textContent;
  byLabel(panel(), "High").dispatchEvent(clickOf(1));
  expect(text()).toBe("Which channel?");
  // The second click of the double click lands on the first choice of the question now shown.
  byLabel(panel(), "Email").dispatchEvent(clickOf(2));
  expect(text()).toBe("Which channel?");
  expect(panel().querySelector(".anvia-question-count")?.textContent).toBe("1/2 answered");
  expect(byLabel(panel(), "Email").getAttribute("aria-pressed")).toBe("false");
  // A click of its own still picks it, and so does the keyboard (a click with no count).
  byLabel(panel(), "Email").dispatchEvent(clickOf(1));
  expect(panel().querySelector(".anvia-question-count")?.textContent).toBe("2/2 answered");
  byLabel(panel(), "Phone").dispatchEvent(clickOf(0));
  expect(byLabel(panel(), "Phone").getAttribute("aria-pressed")).toBe("true");
});
