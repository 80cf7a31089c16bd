// The repair of a typed output that failed validation: the approval's form with its editor open
// on the model's value, the errors as the reason, no "Always allow"; a fix the kernel refuses
// keeps the form (and the person's text) with the kernel's errors.
import { afterEach, describe, expect, it } from "vitest";
import type { ApprovalView } from "../src/protocol";
import { buttons, byLabel, mount, status, tick, toolEntry, type } from "./helpers";

afterEach(() => document.body.replaceChildren());

const repair: ApprovalView = {
  id: "ap_fix",
  status: "pending",
  reason: "The model's list[City] is not valid after 2 retries.\n- result.0.population: Input should be a valid integer",
  args: { result: [{ name: "Paris", population: "many" }] },
  decided_by: null,
  decided_at: null,
  decision_reason: null,
  edited_args: null,
  fix_required: true,
};

function setup() {
  const m = mount(
    [toolEntry("t1", { tool_name: "final_result", status: "approval_required", approval: repair })],
    status("waiting"),
  );
  const panel = m.root.querySelector('[role="alertdialog"]') as HTMLElement;
  return { ...m, panel };
}

const editor = (panel: HTMLElement) => panel.querySelector("textarea") as HTMLTextAreaElement;

describe("the repair form of a typed output", () => {
  it("opens the editor on the model's value, with the errors and without Always allow", () => {
    const { panel } = setup();
    expect(editor(panel).hidden).toBe(false);
    expect(JSON.parse(editor(panel).value)).toEqual(repair.args);
    expect(buttons(panel).filter((b) => !b.hidden).map((b) => b.textContent)).toEqual(["Approve", "Reject"]);
    expect(buttons(panel).some((b) => b.textContent === "Edit arguments" && !b.hidden)).toBe(false);
    expect((panel.querySelector(".anvia-checkbox") as HTMLElement).hidden).toBe(true);
    expect(panel.textContent).toContain("result.0.population: Input should be a valid integer");
  });

  it("sends the fix as edited arguments, and a refused fix keeps the form and the text", async () => {
    const { model, panel } = setup();
    const fixed = '{"result": [{"name": "Paris", "population": 0}]}';
    type(editor(panel), fixed);
    byLabel(panel, "Approve").click();
    expect(model.last("approval_decision")).toMatchObject({
      approval_id: "ap_fix",
      approved: true,
      edited_args: null,
      edited_args_json: fixed,
      always_allow: false,
    });
    model.reply("approval_decision", false, "The edited arguments are not valid for final_result: result.0.population: Input should be greater than 0");
    await tick();
    expect(editor(panel).value).toBe(fixed);
    expect(editor(panel).hidden).toBe(false);
    expect(panel.textContent).toContain("Input should be greater than 0");
    for (const b of buttons(panel).filter((b) => !b.hidden)) expect(b.disabled).toBe(false);
  });
});
