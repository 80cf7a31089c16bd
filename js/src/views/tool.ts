// A tool entry: name and status in a <details> summary; arguments, captured output, result,
// and the panels of its interactions (approval, question: interaction.ts) in the body. Expanded
// while the call is under way (running, or waiting for a person), folded once it is over, unless
// a person opened or closed it: then it stays as they left it.
import { h } from "../dom";
import { schedule } from "../frame";
import { type AppendField, TOOL_STATUS_LABELS, type ToolEntry } from "../protocol";
import type { Session } from "../session";
import type { EntryView } from "./entries";
import { foldedPre, prettyArgs, prettyJson } from "./fold";
import { coversArguments, interactionPanel, interactionsOf, waitsForSomeone } from "./interaction";

/** The arguments a person put in place of the model's before approving, as JSON text (exact
 * when the kernel sent the text: a 64-bit id), or null: none. */
function editedArgs(e: ToolEntry): string | null {
  const a = e.approval;
  if (a?.status !== "approved" || !a.edited_args) return null;
  const edited = a.edited_args_json ?? JSON.stringify(a.edited_args);
  return edited === (a.args_json ?? JSON.stringify(a.args)) ? null : edited;
}

/** Statuses of a call that is not over yet: its entry is shown expanded. */
const UNDER_WAY: ReadonlySet<ToolEntry["status"]> = new Set(["running", "approval_required", "input_required", "approved"]);
const underWay = (e: ToolEntry): boolean => UNDER_WAY.has(e.status) || waitsForSomeone(e);

/** Between the agents of a path and the tool: `lead › analyst › run_sql`. */
export const PATH_SEPARATOR = " \u203a ";

/** The tool as the approval and the question name it: with the agents from the top-level run
 * down when a sub-agent asks (`lead › analyst › run_sql`). */
export function toolLabel(toolName: string, path: readonly string[] | null | undefined): string {
  return path && path.length > 1 ? [...path, toolName].join(PATH_SEPARATOR) : toolName;
}

/** Image types shown (not SVG, which can carry scripts); the kernel sends no others. */
const SHOWN_IMAGES: ReadonlySet<string> = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/** The images a tool returned (an MCP tool's), each as an <img> of its data. */
export function toolImages(e: ToolEntry): HTMLElement[] {
  return (e.images ?? [])
    .filter((i) => SHOWN_IMAGES.has(i.media_type) && /^[A-Za-z0-9+/]*={0,2}$/.test(i.data))
    .map((i) =>
      h("img", {
        class: "anvia-tool-image",
        alt: `Image from ${e.tool_name} (${i.media_type})`,
        src: `data:${i.media_type};base64,${i.data}`,
      }),
    );
}

function section(label: string, content: HTMLElement, cls: string): HTMLElement {
  return h("div", { class: `anvia-section ${cls}` }, h("div", { class: "anvia-section-label" }, label), content);
}

export function toolView(session: Session, entry: ToolEntry): EntryView {
  const name = h("span", { class: "anvia-tool-name" }, entry.tool_name);
  const status = h("span", { class: "anvia-tool-status" });
  const summary = h("summary", { class: "anvia-tool-summary" }, name, " ", status);
  const interaction = h("div", { class: "anvia-interaction" });
  const args = foldedPre("anvia-tool-args", "Arguments");
  const output = foldedPre("anvia-tool-output", "Output");
  const result = foldedPre("anvia-tool-result", "Result");
  // After "Edit arguments" and Approve the tool ran with the edited arguments: those are shown,
  // and the model's own below them, struck through.
  const argsLabel = h("div", { class: "anvia-section-label" }, "Arguments");
  const original = foldedPre("anvia-tool-args-original", "Original arguments");
  const originalBlock = h(
    "div",
    { class: "anvia-args-original", hidden: true },
    h("div", { class: "anvia-section-label" }, "Original arguments (replaced before approval)"),
    original.el,
  );
  const argsSection = h("div", { class: "anvia-section anvia-section-args" }, argsLabel, args.el, originalBlock);
  const outputSection = section("Output", output.el, "anvia-section-output");
  const resultSection = section("Result", result.el, "anvia-section-result");
  // A sub-agent's work (agent.as_tool): its entries are drawn here, in a block of their own.
  const nestedTitle = h("summary", { class: "anvia-subagent-summary" });
  const nested = h("div", { class: "anvia-subagent-entries" });
  const nestedBlock = h("details", { class: "anvia-subagent", hidden: true, open: true }, nestedTitle, nested);
  const imagesBox = h("div", { class: "anvia-tool-images" });
  const imagesSection = section("Images", imagesBox, "anvia-section-images");
  const body = h(
    "div",
    { class: "anvia-tool-body" },
    interaction,
    argsSection,
    nestedBlock,
    outputSection,
    resultSection,
    imagesSection,
  );
  const el = h("details", { class: "anvia-entry anvia-entry-tool" }, summary, body);
  // Only a person's toggles are remembered for redrawn views, not the opening this view does
  // itself when an interaction is pending (its toggle event comes later, as a task).
  let selfSet: boolean | null = null;
  const setOpen = (open: boolean): void => {
    if (el.open === open) return;
    selfSet = open;
    el.open = open;
  };
  /** Open as the call's progress says, unless a person chose (theirs is kept). */
  const follow = (e: ToolEntry): void => setOpen(session.openEntries.get(session.entryKey(e.id)) ?? underWay(e));
  follow(entry);
  el.addEventListener("toggle", () => {
    const own = selfSet !== null && el.open === selfSet;
    selfSet = null;
    if (!own) session.openEntries.set(session.entryKey(current.id), el.open);
  });

  let current = entry;
  /** The interaction panels shown, in order (an approval first, then a question). */
  let panels: ReturnType<typeof interactionPanel>[] = [];
  let wasPending = waitsForSomeone(entry);
  let wasUnderWay = underWay(entry);

  const renderArgs = (): void => {
    const edited = editedArgs(current);
    args.set(prettyArgs(edited ?? current.arguments));
    if (edited) original.set(prettyArgs(current.arguments));
    originalBlock.hidden = !edited;
    const label = edited ? "Arguments (edited before approval)" : "Arguments";
    if (argsLabel.textContent !== label) argsLabel.textContent = label;
  };

  function update(e: ToolEntry): void {
    current = e;
    name.textContent = e.tool_name;
    status.textContent = TOOL_STATUS_LABELS[e.status];
    status.className = `anvia-tool-status anvia-tool-status-${e.status}`;
    renderArgs();
    output.set(e.output);
    outputSection.hidden = e.output === "";
    result.set(e.result === null ? "" : prettyJson(e.result));
    resultSection.hidden = e.result === null;
    resultSection.classList.toggle("anvia-result-error", e.is_error);
    const images = toolImages(e);
    const shown = Array.from(imagesBox.children, (c) => (c as HTMLImageElement).src);
    if (images.length !== shown.length || images.some((img, i) => (img as HTMLImageElement).src !== shown[i])) {
      imagesBox.replaceChildren(...images);
    }
    imagesSection.hidden = images.length === 0;

    if (e.sub_agent) {
      const who = e.sub_agent.agent_name || e.sub_agent.agent_id;
      const title = `Sub-agent ${who}`;
      if (nestedTitle.textContent !== title) nestedTitle.textContent = title;
      nestedBlock.hidden = false;
    }
    const next = interactionsOf(e).map((i) => {
      const kept = panels.find((p) => p.kind === i.kind);
      kept?.update(i);
      return kept ?? interactionPanel(session, toolLabel(e.tool_name, i.view.path), i);
    });
    if (next.length !== panels.length || next.some((p, i) => panels[i] !== p)) {
      interaction.replaceChildren(...next.map((p) => p.el));
    }
    panels = next;
    // The panel already shows the arguments of a pending approval, and a question shows its questions.
    argsSection.hidden = coversArguments(e);

    // A new question or approval always opens the entry (someone must answer it); otherwise the
    // entry follows the call when it starts or ends.
    const pending = waitsForSomeone(e);
    const going = underWay(e);
    if (pending && !wasPending) setOpen(true);
    else if (going !== wasUnderWay) follow(e);
    wasPending = pending;
    wasUnderWay = going;
  }

  update(entry);
  return {
    el,
    nested,
    update: (e) => update(e as ToolEntry),
    append(field: AppendField, text: string) {
      if (field === "output") {
        output.append(text);
        outputSection.hidden = current.output === "";
      } else if (field === "arguments") {
        schedule(args, renderArgs);
      }
    },
    dispose() {},
  };
}
