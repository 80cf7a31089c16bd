// Text that is not markdown but has lines of its own (a question a model or an MCP server wrote,
// an error) keeps its line breaks: the widget's reset (`all: revert`) would collapse them.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { QuestionView } from "../src/protocol";
import { mount, status, toolEntry } from "./helpers";

const CSS = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "../src/views/styles.css"), "utf8");

/** A form field an MCP server asks for: its message heads the field's label, a blank line between. */
const ASKED = "Please confirm the transfer.\n\nAmount: in euros";

const question = (status: QuestionView["status"]): QuestionView => ({
  id: "q_1",
  status,
  questions: [{ id: "amount", question: ASKED, choices: [] }],
  answers: status === "answered" ? [{ questionId: "amount", answer: "12\n(twelve)", custom: true, label: "12\n(twelve)" }] : [],
});

afterEach(() => {
  document.head.replaceChildren();
  document.body.replaceChildren();
});

function styled(...args: Parameters<typeof mount>): HTMLElement {
  const style = document.createElement("style");
  style.textContent = CSS;
  document.head.append(style);
  return mount(...args).root;
}

const whiteSpace = (el: Element | null): string => {
  expect(el).not.toBeNull();
  return getComputedStyle(el as Element).whiteSpace;
};

describe("line breaks", () => {
  it("of a pending question's text are kept", () => {
    const root = styled([toolEntry("t1", { status: "input_required", question: question("pending") })], status("waiting"));
    const text = root.querySelector(".anvia-question-text");
    expect(text?.textContent).toBe(ASKED);
    expect(whiteSpace(text)).toBe("pre-wrap");
  });

  it("of an answered question and its answer are kept", () => {
    const root = styled([toolEntry("t1", { status: "done", question: question("answered") })], status("success"));
    expect(whiteSpace(root.querySelector(".anvia-answers dt"))).toBe("pre-wrap");
    expect(whiteSpace(root.querySelector(".anvia-answers dd"))).toBe("pre-wrap");
  });

  it("of an error are kept", () => {
    const error = "1 validation error for Refund\namount\n  Input should be greater than 0";
    const root = styled([{ kind: "error", id: "e1", text: error }], status("error"));
    const line = root.querySelector(".anvia-entry-error .anvia-line-text");
    expect(line?.textContent).toBe(error);
    expect(whiteSpace(line)).toBe("pre-wrap");
  });
});
