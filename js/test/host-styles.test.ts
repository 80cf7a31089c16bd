// The widget's styles hold against the host page's: a notebook's own <style>, JupyterLab's rendered
// HTML rules, the classic notebook's definition lists.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import type { QuestionView } from "../src/protocol";
import { mount, status, toolEntry } from "./helpers";

const CSS = readFileSync(join(dirname(fileURLToPath(import.meta.url)), "../src/views/styles.css"), "utf8");

/** Rules a host page may have for bare definition lists. */
const HOST = `
dl { display: grid; margin: 2em; padding: 1em; border: 3px solid red; }
dt { float: left; clear: left; width: 30%; font-style: italic; color: rgb(255, 0, 0); text-align: right; }
dd { display: inline; margin-left: 40%; font-family: serif; text-transform: uppercase; }
.jp-OutputArea-output dt { font-weight: 100; padding: 9px; }
.jp-OutputArea-output dl dd { background: yellow; }
`;

const answered: QuestionView = {
  id: "q_1",
  status: "answered",
  questions: [{ id: "p", question: "What priority?", choices: [{ label: "High", value: "high" }] }],
  answers: [{ questionId: "p", answer: "high", choice: "high", label: "High" }],
};

afterEach(() => {
  document.head.replaceChildren();
  document.body.replaceChildren();
});

function styled(): { dl: HTMLElement; dt: HTMLElement; dd: HTMLElement } {
  const widget = document.createElement("style");
  widget.textContent = CSS;
  const host = document.createElement("style");
  host.textContent = HOST;
  document.head.append(host, widget);
  const output = document.createElement("div");
  output.className = "jp-OutputArea-output";
  document.body.append(output);
  const m = mount([toolEntry("t1", { status: "done", question: answered })], status("success"));
  output.append(m.el);
  const dl = m.root.querySelector(".anvia-answers") as HTMLElement;
  return { dl, dt: dl.querySelector("dt")!, dd: dl.querySelector("dd")! };
}

describe("host page styles", () => {
  it("do not reach the answered questions' summary", () => {
    const { dl, dt, dd } = styled();
    expect(dt.textContent).toBe("What priority?");
    const l = getComputedStyle(dl);
    expect([l.display, l.marginTop, l.paddingTop, l.borderTopWidth]).toEqual(["block", "0px", "0px", "0px"]);
    const t = getComputedStyle(dt);
    expect([t.float, t.fontStyle, t.fontWeight, t.textAlign, t.paddingTop]).toEqual(["none", "normal", "600", "start", "0px"]);
    expect(t.color).not.toBe("rgb(255, 0, 0)");
    const d = getComputedStyle(dd);
    expect([d.display, d.marginLeft, d.textTransform]).toEqual(["block", "12px", "none"]);
    expect(d.fontFamily).not.toBe("serif");
    expect(d.backgroundColor).not.toBe("yellow");
  });
});
