// The Inspect view: one model call of the run at a time, fetched from the kernel only when a
// person opens it (`inspect` -> `inspect_reply`): what the model received (instructions, the
// tools with their JSON schemas, the settings, the messages), what it returned, the tokens and
// the timings, and the tool calls it asked for. Everything is shown as text (never as HTML) and
// long texts are folded, like the transcript; the messages are drawn when their section opens.
import { button, formatTime, h, nextDomId } from "../dom";
import type { InspectSubAgentView, InspectTurnView } from "../protocol";
import type { Session, SessionEvent } from "../session";
import { foldedPre } from "./fold";

export interface InspectView {
  /** The "Inspect" toggle (placed in the status bar). */
  button: HTMLButtonElement;
  /** The panel (placed under the transcript). */
  el: HTMLElement;
  dispose(): void;
}

/** "0.4 ms", "640 ms", "1.8 s", "2 min 5 s". */
export function formatMs(ms: number): string {
  if (ms < 10) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

const tokens = (n: number): string => n.toLocaleString();

function text(className: string, label: string, value: string, prose = false): HTMLElement {
  const block = foldedPre(className, label, prose ? { prose: true, chars: 600, lines: 8 } : {});
  block.set(value);
  return block.el;
}

/** A section of the panel: a <details> whose content is built the first time it opens. */
function section(label: string, open: boolean, build: () => Node[], className: string): HTMLDetailsElement {
  const el = h("details", { class: `anvia-inspect-section ${className}` }, h("summary", {}, label));
  let built = false;
  const fill = (): void => {
    if (built || !el.open) return;
    built = true;
    el.append(...build());
  };
  el.addEventListener("toggle", fill);
  el.open = open;
  fill();
  return el;
}

/** A model call's tokens; a model that reported none (an offline one) has no counts to show,
 * which "0 in / 0 out" would pass off as real ones. */
export function usage(turn: Pick<InspectTurnView, "input_tokens" | "output_tokens" | "cached_tokens">): string {
  if (turn.input_tokens === 0 && turn.output_tokens === 0) return "no token counts (the model reported none)";
  const cached = turn.cached_tokens === null ? "" : ` (${tokens(turn.cached_tokens)} cached)`;
  return `${tokens(turn.input_tokens)} in / ${tokens(turn.output_tokens)} out tokens${cached}`;
}

function facts(turn: InspectTurnView): HTMLElement {
  const list = h("dl", { class: "anvia-inspect-facts" });
  const add = (term: string, value: Node | string): void => {
    list.append(h("dt", {}, term), h("dd", {}, value));
  };
  const model = [turn.model, turn.provider ? `(${turn.provider})` : ""].filter(Boolean).join(" ");
  if (model) add("Model", model);
  if (turn.started_at) add("Started", h("time", { datetime: turn.started_at }, formatTime(turn.started_at)));
  add("First token", turn.first_token_ms === null ? "none" : formatMs(turn.first_token_ms));
  add("Duration", turn.duration_ms === null ? "still running" : formatMs(turn.duration_ms));
  add("Usage", usage(turn));
  if (turn.finish_reason) add("Finish reason", turn.finish_reason);
  if (turn.attempts > 1) add("Attempts", String(turn.attempts));
  return list;
}

/** The model calls of the sub-agent's run that a tool call ran, each in short (its tools, and
 * their own sub-agents' calls, nested): folded, built when opened. */
function subAgentBlock(sub: InspectSubAgentView): HTMLElement {
  const who = sub.agent_name && sub.agent_name !== sub.agent_id ? `${sub.agent_name} (${sub.agent_id})` : sub.agent_id;
  const count = sub.model_call_count;
  const shown = sub.model_calls.length < count ? `the first ${sub.model_calls.length} of ${count} model calls` : `${count} model call${count === 1 ? "" : "s"}`;
  return section(
    `Sub-agent ${who}: ${shown}`,
    false,
    () =>
      sub.model_calls.length === 0
        ? [h("div", { class: "anvia-muted" }, "No model call yet")]
        : sub.model_calls.map((call) => {
            const head = [
              `Model call ${call.index + 1} (turn ${call.turn})`,
              call.model ?? "",
              call.duration_ms === null ? "still running" : formatMs(call.duration_ms),
              usage(call),
            ]
              .filter(Boolean)
              .join(" · ");
            const parts: Node[] = [h("div", { class: "anvia-section-label" }, head)];
            if (call.error) parts.push(h("div", { class: "anvia-error-text" }, "Error: ", call.error));
            parts.push(text("anvia-inspect-sub-response", `Response of ${sub.agent_id}`, call.response_text || "(no text)", true));
            for (const tool of call.tool_calls) {
              const line = [tool.name, tool.status ?? "running", tool.duration_ms === null ? "" : formatMs(tool.duration_ms)].filter(Boolean).join(" · ");
              parts.push(h("div", { class: "anvia-inspect-sub-tool" }, h("code", { class: "anvia-tool-name" }, line)));
              if (tool.sub_agent) parts.push(subAgentBlock(tool.sub_agent));
            }
            return h("div", { class: "anvia-inspect-sub-call" }, ...parts);
          }),
    "anvia-inspect-sub-agent",
  );
}

function turnBody(turn: InspectTurnView): Node[] {
  const out: Node[] = [facts(turn)];
  if (turn.error) out.push(h("div", { class: "anvia-error-text anvia-inspect-error" }, "Error: ", turn.error));
  out.push(
    section(
      "Instructions",
      false,
      () => [turn.instructions === null ? h("div", { class: "anvia-muted" }, "None") : text("anvia-inspect-instructions", "Instructions", turn.instructions, true)],
      "anvia-inspect-instructions-section",
    ),
    section(
      `Tools offered (${turn.tools.length})`,
      true,
      () =>
        turn.tools.length === 0
          ? [h("div", { class: "anvia-muted" }, "None")]
          : turn.tools.map((tool) =>
              h(
                "div",
                { class: "anvia-inspect-tool" },
                h("div", {}, h("code", { class: "anvia-tool-name" }, tool.name), tool.description ? ` ${tool.description}` : ""),
                text("anvia-inspect-schema", `JSON schema of ${tool.name}`, tool.parameters),
              ),
            ),
      "anvia-inspect-tools",
    ),
    section(
      turn.messages.length < turn.message_count
        ? `Messages (the last ${turn.messages.length} of ${turn.message_count})`
        : `Messages (${turn.message_count})`,
      false,
      () =>
        turn.messages.map((m) =>
          h("div", { class: "anvia-inspect-message" }, h("div", { class: "anvia-section-label" }, m.role), text("anvia-inspect-message-text", `${m.role} message`, m.text, true)),
        ),
      "anvia-inspect-messages",
    ),
    section("Settings", false, () => [text("anvia-inspect-settings", "Settings", turn.settings)], "anvia-inspect-settings-section"),
    section(
      "Response",
      true,
      () => {
        const parts: Node[] = [text("anvia-inspect-response", "Response text", turn.response_text || "(no text)", true)];
        if (turn.reasoning) parts.push(h("div", { class: "anvia-section-label" }, "Reasoning"), text("anvia-inspect-reasoning", "Reasoning", turn.reasoning, true));
        if (turn.response_tool_calls !== "[]") {
          parts.push(h("div", { class: "anvia-section-label" }, "Tool calls asked for"), text("anvia-inspect-response-calls", "Tool calls asked for", turn.response_tool_calls));
        }
        return parts;
      },
      "anvia-inspect-response-section",
    ),
  );
  if (turn.tool_calls.length > 0) {
    out.push(
      section(
        `Tool calls (${turn.tool_calls.length})`,
        false,
        () =>
          turn.tool_calls.map((call) => {
            const head = [call.name, call.status ?? "running", call.duration_ms === null ? "" : formatMs(call.duration_ms)].filter(Boolean).join(" · ");
            const parts: Node[] = [h("div", { class: "anvia-section-label" }, head), text("anvia-inspect-call-args", `Arguments of ${call.name}`, call.args)];
            if (call.result !== null) parts.push(text("anvia-inspect-call-result", `Result of ${call.name}`, call.result));
            if (call.sub_agent) parts.push(subAgentBlock(call.sub_agent));
            if (call.approval) parts.push(h("div", { class: "anvia-section-label" }, "Approval"), text("anvia-inspect-call-approval", "Approval record", call.approval));
            if (call.question) parts.push(h("div", { class: "anvia-section-label" }, "Question"), text("anvia-inspect-call-question", "Question record", call.question));
            if (call.traceback) {
              // Folded: the model saw only the result's message; the traceback is for a person.
              const lines = call.traceback.trimEnd().split("\n");
              const last = lines[lines.length - 1] ?? "";
              parts.push(
                h(
                  "details",
                  { class: "anvia-inspect-call-traceback" },
                  h("summary", {}, `Traceback: ${last.length > 120 ? `${last.slice(0, 119)}…` : last}`),
                  text("anvia-inspect-traceback", `Traceback of ${call.name}`, call.traceback),
                ),
              );
            }
            return h("div", { class: "anvia-inspect-call" }, ...parts);
          }),
        "anvia-inspect-calls",
      ),
    );
  }
  return out;
}

export function inspectView(session: Session): InspectView {
  const panelId = nextDomId("inspect");
  const toggle = button("Inspect", () => (panel.hidden ? open() : close()), {
    class: "anvia-button anvia-inspect-toggle",
    "aria-expanded": "false",
    "aria-controls": panelId,
  });
  const where = h("span", { class: "anvia-inspect-where" });
  const previous = button("Previous call", () => void load(shown - 1));
  const next = button("Next call", () => void load(shown + 1));
  const latest = button("Latest", () => void load(null));
  const error = h("div", { class: "anvia-error-text", role: "alert", hidden: true });
  const body = h("div", { class: "anvia-inspect-body" });
  const panel = h(
    "section",
    { class: "anvia-inspect", id: panelId, "aria-label": "Inspect the run", hidden: true },
    h("div", { class: "anvia-row anvia-inspect-nav" }, previous, where, next, latest),
    error,
    body,
  );
  /** The call shown (-1: none yet) and how many the run made when it was fetched. */
  let shown = -1;
  let count = 0;
  let asked = 0;

  const setNav = (busy: boolean): void => {
    previous.disabled = busy || shown <= 0;
    next.disabled = busy || shown < 0 || shown >= count - 1;
    latest.disabled = busy;
  };

  async function load(index: number | null): Promise<void> {
    const ticket = ++asked;
    setNav(true);
    const reply = await session.inspect(index);
    if (ticket !== asked || panel.hidden) return; // a later request, or the panel was closed
    count = reply.count;
    if (!reply.ok || reply.turn === null) {
      error.textContent = `Could not inspect the run: ${reply.error ?? "unknown error"}`;
      error.hidden = false;
      setNav(false);
      return;
    }
    error.hidden = true;
    shown = reply.turn.index;
    where.textContent = `Model call ${shown + 1} of ${count} (turn ${reply.turn.turn})`;
    body.replaceChildren(...turnBody(reply.turn));
    setNav(false);
  }

  function open(): void {
    panel.hidden = false;
    toggle.setAttribute("aria-expanded", "true");
    void load(shown >= 0 ? shown : null);
  }

  function close(): void {
    panel.hidden = true;
    toggle.setAttribute("aria-expanded", "false");
  }

  const showToggle = (): void => {
    toggle.hidden = session.store.status.turn === 0;
  };
  /** The run the panel shows (a Studio shows one run after another). */
  let runId = session.store.status.run_id ?? null;
  const onEvent = (ev: SessionEvent): void => {
    if (ev.type === "status") {
      showToggle();
      const now = ev.status.run_id ?? null;
      if (now !== runId) {
        // Another run: its calls, not the last run's. An open panel shows its latest call.
        runId = now;
        shown = -1;
        if (!panel.hidden) void load(null);
      }
    } else if (ev.type === "reset" && session.store.entries.length === 0) {
      // A new Studio session: what was shown belongs to another run.
      shown = -1;
      body.replaceChildren();
      where.textContent = "";
      close();
    }
  };
  showToggle();
  setNav(false);
  const unsubscribe = session.subscribe(onEvent);
  return { button: toggle, el: panel, dispose: unsubscribe };
}
