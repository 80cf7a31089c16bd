// A pending question's choices and custom answer box say which question they answer, to a screen
// reader too: the choices' group is named by the question, the box described by it.
import { afterEach, expect, it } from "vitest";
import type { QuestionView } from "../src/protocol";
import { byLabel, mount, status, toolEntry } from "./helpers";

afterEach(() => document.body.replaceChildren());

const question: QuestionView = {
  id: "q_1",
  status: "pending",
  questions: [
    { id: "priority", question: "What priority?", choices: [{ label: "High", value: "high" }] },
    { id: "channel", question: "Which channel?", choices: [{ label: "Email", value: "email" }] },
  ],
  answers: [],
};

/** The text of the elements an `aria-labelledby` / `aria-describedby` attribute points at. */
const referenced = (el: Element | null, attribute: string): string =>
  (el?.getAttribute(attribute) ?? "")
    .split(/\s+/)
    .filter(Boolean)
    .map((id) => document.getElementById(id)?.textContent ?? "")
    .join(" ");

it("names the choices and describes the custom answer box by the question shown", () => {
  const { root } = mount([toolEntry("t1", { tool_name: "ask_question", status: "input_required", question })], status("waiting"));
  const panel = root.querySelector(".anvia-question") as HTMLElement;
  const choices = panel.querySelector('[role="group"].anvia-choices');
  const box = panel.querySelector(".anvia-custom-answer");
  expect(referenced(choices, "aria-labelledby")).toBe("What priority?");
  expect(referenced(box, "aria-describedby")).toBe("What priority?");
  byLabel(panel, "High").click();
  expect(referenced(choices, "aria-labelledby")).toBe("Which channel?");
  expect(referenced(box, "aria-describedby")).toBe("Which channel?");
});
