// What is particular to an approval, drawn by the interaction panel (interaction.ts): the
// pending form (reason, arguments, edit, reject reason, always allow, Approve / Reject) and the
// one inline line that records the decision. The reason and the arguments come from the model
// and can be any length: they are folded (and bounded in height once unfolded) so that the
// decision buttons stay in view.
import { button, formatTime, h, nextDomId } from "../dom";
import { type ApprovalView, type DecidedVia, type Decider, TOOL_STATUS_LABELS, type ToolStatus } from "../protocol";
import { isPlainObject } from "../validate";
import { type FoldOptions, foldedPre, foldPoint, prettyArgs, prettyArgsValue, showOverrides } from "./fold";
import { errorLine, type Form, type Submit } from "./interaction";

/** Who decided, by the decider and, where it tells more, by the decider and where it came from
 * (a timeout says nothing more than its status). */
const WHO: Partial<Record<Decider | `${Decider} ${DecidedVia}`, string>> = {
  "human widget": "by you",
  "human handle": "from code in the notebook",
  "human store": "through the run store",
  "human cli": "from the terminal",
  "human human_input": "by the human input",
  "policy widget": "by \u201cAlways allow\u201d",
  human: "by a person",
  handler: "by the approval handler",
  policy: "by a rule",
  stop: "when the run was stopped",
  runtime: "by the runtime",
};

/** Who decided and from where, as the decision line says it ("Approved from the terminal"). */
export const deciderWords = (by: ApprovalView["decided_by"], via: ApprovalView["decided_via"]): string =>
  by ? (WHO[`${by} ${via ?? ""}` as `${Decider} ${DecidedVia}`] ?? WHO[by] ?? "") : "";

/** Reasons longer than this (or with more lines) are folded. */
const REASON = { prose: true, chars: 400, lines: 6 } satisfies FoldOptions;

/** A folded block of `text` (a reason, unless other options are given). */
const folded = (className: string, label: string, text: string, options: FoldOptions = REASON): HTMLElement => {
  const block = foldedPre(className, label, options);
  block.set(text);
  return block.el;
};

/** "Approved by you at <time> with edited arguments." plus the reason. */
export function approvalRecord(a: ApprovalView): HTMLElement {
  // The status in the words of the tool entry's ("Approved", "Timed out"): a record is never
  // pending (the interaction panel draws a pending approval as its form).
  const status = TOOL_STATUS_LABELS[a.status as ToolStatus];
  const line = h("div", { class: `anvia-decision anvia-decision-${a.status}` }, h("strong", {}, status));
  const who = deciderWords(a.decided_by, a.decided_via ?? null);
  if (who) line.append(` ${who}`);
  if (a.decided_at) {
    line.append(" at ", h("time", { datetime: a.decided_at }, formatTime(a.decided_at)));
  }
  if (a.status === "approved" && a.edited_args) line.append(" with edited arguments");
  line.append(".");
  if (!a.decision_reason) return line;
  const reason = showOverrides(a.decision_reason);
  // A long reason goes in a folded block under the line.
  const long = foldPoint(reason, REASON.chars, REASON.lines) !== null;
  line.append(" ", h("span", { class: "anvia-decision-reason" }, long ? "Reason:" : `Reason: ${reason}`));
  return long ? h("div", {}, line, folded("anvia-decision-reason-text", "Decision reason", reason)) : line;
}

export function approvalForm(a: ApprovalView, toolName: string, submit: Submit): Form {
  // A typed output that failed validation (`fix_required`): the fix is the edited arguments, so
  // the editor is open with the model's value, and a fix is never "always allowed".
  const fix = a.fix_required === true;
  const reasonId = nextDomId("approval-reason");
  // Problems with the edited arguments show right under the editor (the error line by the
  // buttons can be out of view when the editor is tall).
  const editError = errorLine("anvia-edit-error", nextDomId("approval-edit-error"));
  const editor = h("textarea", {
    class: "anvia-approval-editor",
    "aria-label": `Edited arguments for ${toolName} (JSON object)`,
    "aria-describedby": editError.el.id,
    rows: 6,
    spellcheck: "false",
    hidden: !fix,
  });
  // The arguments as shown and first put in the editor: from the kernel's JSON text when it
  // sent one (a whole number past 2**53, which the page's numbers would round).
  const shownArgs = a.args_json != null ? prettyArgs(a.args_json) : prettyArgsValue(a.args);
  if (fix) editor.value = shownArgs;
  /** Say what is wrong with the edited arguments ("": nothing), with the cursor back in them. */
  const setEditError = (text: string): void => {
    if (text) editor.setAttribute("aria-invalid", "true");
    else editor.removeAttribute("aria-invalid");
    if (text) editor.focus(); // before the error is scrolled into view, so that it stays in view
    editError.set(text);
  };
  const editToggle = button("Edit arguments", () => {
    const open = editor.hidden;
    editor.hidden = !open;
    editToggle.setAttribute("aria-expanded", String(open));
    if (!open) return setEditError("");
    if (!editor.value) editor.value = shownArgs;
    editor.focus();
  }, { class: "anvia-button anvia-link-button", "aria-expanded": "false", hidden: fix });
  const reasonInput = h("input", {
    type: "text",
    class: "anvia-input anvia-reject-reason",
    placeholder: "Reason (optional)",
    "aria-label": "Reason for the decision (optional)",
  });
  const always = h("input", { type: "checkbox", class: "anvia-always-allow" });
  const alwaysLabel = h("label", { class: "anvia-checkbox", hidden: fix }, always, ` Always allow ${toolName} in this session`);
  const approve = button("Approve", () => decide(true), { class: "anvia-button anvia-primary" });
  const reject = button("Reject", () => decide(false), { class: "anvia-button anvia-danger" });

  function decide(approved: boolean): void {
    // Edited arguments travel as the text typed, which the kernel reads exactly (parsed here,
    // a 64-bit id would be rounded); an editor opened only to read them edits nothing.
    let edited: string | null = null;
    if (approved && !editor.hidden && (fix || editor.value.trim() !== shownArgs.trim())) {
      let value: unknown;
      try {
        value = JSON.parse(editor.value);
      } catch (err) {
        return setEditError(`The edited arguments are not valid JSON: ${(err as Error).message}`);
      }
      if (!isPlainObject(value)) return setEditError("The edited arguments must be a JSON object.");
      edited = editor.value;
    }
    setEditError("");
    submit({
      type: "approval_decision",
      approval_id: a.id,
      approved,
      reason: reasonInput.value.trim() || null,
      edited_args: null,
      edited_args_json: edited,
      always_allow: approved && always.checked,
    });
  }

  const el = h(
    "div",
    { class: "anvia-approval", role: "alertdialog", "aria-label": `Approval required for ${toolName}`, "aria-describedby": a.reason ? reasonId : null },
    h("div", { class: "anvia-panel-title" }, "Approval required for ", h("code", {}, toolName)),
    a.reason ? folded("anvia-approval-reason", "Reason", showOverrides(a.reason), { ...REASON, id: reasonId }) : null,
    h("div", { class: "anvia-section-label" }, "Arguments"),
    folded("anvia-approval-args", "Arguments", shownArgs, {}),
    editToggle,
    editor,
    editError.el,
    h("div", { class: "anvia-row" }, reasonInput),
    alwaysLabel,
    h("div", { class: "anvia-row anvia-actions" }, approve, reject),
  );
  return { el };
}
