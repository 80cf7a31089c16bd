// The static copy of a finished run (the cell output a saved notebook keeps) gives way to a live
// view while the run's model lives in the page, and comes back when the model is gone.
import { afterEach, describe, expect, it } from "vitest";
import { coveredSlots } from "../src/slots";
import { mount, status, tick } from "./helpers";

afterEach(() => document.body.replaceChildren());

const KEY = "k0123456789abcdef";

/** The cell output the kernel publishes at the end of a run (as session.static_bundle does). */
function staticOutput(key = KEY): HTMLElement {
  const output = document.createElement("div");
  output.className = "jp-OutputArea-output";
  output.innerHTML =
    `<div class="anvia-live-slot anvia-key-${key} tex2jax_ignore mathjax_ignore">` +
    '<div class="anvia-static-transcript"><div><strong>Shop</strong> — Done</div>' +
    "<pre>Order **A1** has shipped.</pre></div></div>";
  return output;
}

const finished = () =>
  mount([{ kind: "assistant", id: "a1", turn: 1, text: "Order **A1** has shipped." }], status("success"), {
    _anvia_key: KEY,
  });

const copyOf = (output: HTMLElement) => output.querySelector(".anvia-static-transcript") as HTMLElement | null;
const liveOf = (output: HTMLElement) => output.querySelector(".anvia-live-view .anvia-root") as HTMLElement | null;

describe("static copies of a finished run", () => {
  it("give way to a live view while the model lives", async () => {
    const m = finished();
    const output = staticOutput();
    document.body.appendChild(output);
    await tick();
    const live = liveOf(output);
    expect(live).not.toBeNull();
    expect(live!.querySelector(".anvia-entry-assistant strong")?.textContent).toBe("A1"); // markdown, rendered
    expect(copyOf(output)).toBeNull(); // out of the page: nothing finds the same words twice
    expect(output.textContent).not.toContain("Shop — Done");
    m.cleanup();
  });

  it("already in the page when the model arrives are covered at once", () => {
    const output = staticOutput();
    document.body.appendChild(output);
    const m = finished();
    expect(liveOf(output)).not.toBeNull();
    m.cleanup();
  });

  it("are hidden by a rule of their own widget from the moment they are drawn", () => {
    const m = finished();
    const style = [...document.querySelectorAll("style")].map((el) => el.textContent).join("\n");
    expect(style).toContain(`.anvia-live-slot.anvia-key-${KEY} > .anvia-static-transcript { display: none !important; }`);
    expect(style).not.toContain("someone-else");
    m.cleanup();
    const after = [...document.querySelectorAll("style")].map((el) => el.textContent).join("\n");
    expect(after).not.toContain(KEY);
  });

  it("of another widget stay as they are", async () => {
    const m = finished();
    const output = staticOutput("someone-else");
    document.body.appendChild(output);
    await tick();
    expect(liveOf(output)).toBeNull();
    expect(copyOf(output)).not.toBeNull();
    m.cleanup();
  });

  it("show again when the model goes (its views go with it)", async () => {
    const m = finished();
    const output = staticOutput();
    document.body.appendChild(output);
    await tick();
    expect(liveOf(output)).not.toBeNull();
    m.cleanup();
    expect(liveOf(output)).toBeNull();
    expect(copyOf(output)?.textContent).toContain("Order **A1** has shipped.");
    expect(coveredSlots()).toHaveLength(0);
  });

  it("let go of their view when they leave the page, and get one again when they come back", async () => {
    const m = finished();
    const output = staticOutput();
    document.body.appendChild(output);
    await tick();
    expect(coveredSlots()).toHaveLength(1);
    output.remove(); // a cleared output, or a cell scrolled out of a windowed notebook
    document.body.appendChild(document.createElement("div")); // any later change of the page
    await tick();
    expect(coveredSlots()).toHaveLength(0);
    expect(liveOf(output)).toBeNull();
    expect(copyOf(output)).not.toBeNull();
    document.body.appendChild(output);
    await tick();
    expect(liveOf(output)).not.toBeNull();
    expect(output.querySelectorAll(".anvia-live-view")).toHaveLength(1);
    expect(copyOf(output)).toBeNull();
    m.cleanup();
  });

  it("keep their live view when the front end redraws the output with the same copy", async () => {
    const m = finished();
    const first = staticOutput();
    document.body.appendChild(first);
    await tick();
    const live = liveOf(first);
    expect(live).not.toBeNull();
    // JupyterLab redraws an output the kernel updated (the update sent again when the next cell
    // starts): the old output goes and a new one with the same copy comes, in one change. The
    // view moves over, with what a person opened in it (Inspect, entries) and where it was.
    const second = staticOutput();
    first.replaceWith(second);
    await tick();
    expect(liveOf(second)).toBe(live);
    expect(coveredSlots()).toHaveLength(1);
    expect(copyOf(second)).toBeNull();
    expect(copyOf(first)).not.toBeNull(); // the old output keeps its copy
    expect(liveOf(first)).toBeNull();
    m.cleanup();
    expect(liveOf(second)).toBeNull();
    expect(copyOf(second)).not.toBeNull();
  });

  it("keep the focus in a live view moved to an output redrawn with the same copy", async () => {
    const m = finished();
    const first = staticOutput();
    document.body.appendChild(first);
    await tick();
    const transcript = liveOf(first)?.querySelector(".anvia-transcript") as HTMLElement;
    transcript.focus(); // a person reading it with the keys
    expect(document.activeElement).toBe(transcript);
    const second = staticOutput();
    first.replaceWith(second); // the move takes the focus away, without a blur
    await tick();
    expect(liveOf(second)?.querySelector(".anvia-transcript")).toBe(transcript);
    expect(document.activeElement).toBe(transcript);
    m.cleanup();
  });

  it("leave the focus where it is when the moved view did not have it", async () => {
    const m = finished();
    const first = staticOutput();
    document.body.appendChild(first);
    await tick();
    const elsewhere = document.body.appendChild(document.createElement("input"));
    elsewhere.focus();
    const second = staticOutput();
    first.replaceWith(second);
    await tick();
    expect(document.activeElement).toBe(elsewhere);
    m.cleanup();
  });

  it("of an evaluation report give way to its live table, and show again without the model", async () => {
    // EvalsSession.static_bundle: the report's own HTML (EvalReport._repr_html_) in the slot.
    const output = document.createElement("div");
    output.className = "jp-OutputArea-output";
    output.innerHTML =
      `<div class="anvia-live-slot anvia-key-${KEY} tex2jax_ignore mathjax_ignore">` +
      '<div class="anvia-eval-report"><p><strong>Evaluation of support</strong>: 5/5 cases</p>' +
      "<table><tbody><tr><td>status</td></tr></tbody></table></div></div>";
    const report = () => output.querySelector(".anvia-eval-report");
    const m = mount([], status("idle", { turn: 0 }), { _anvia_key: KEY, mode: "evals", title: "Evaluation of support" });
    const style = [...document.querySelectorAll("style")].map((el) => el.textContent).join("\n");
    expect(style).toContain(`.anvia-live-slot.anvia-key-${KEY} > .anvia-eval-report { display: none !important; }`);
    document.body.appendChild(output);
    await tick();
    expect(output.querySelector(".anvia-live-view .anvia-evals-mode")).not.toBeNull();
    expect(report()).toBeNull(); // one table on screen, not the live one and its copy under it
    expect(output.textContent).not.toContain("5/5 cases");
    m.cleanup();
    expect(output.querySelector(".anvia-live-view")).toBeNull();
    expect(report()?.textContent).toContain("5/5 cases");
  });
});
