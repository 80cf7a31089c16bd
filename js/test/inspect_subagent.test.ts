// The Inspect view of a tool call that ran a sub-agent: the sub-agent's model calls under it,
// nested a level further for the sub-agent's own sub-agent; the wire check follows the nesting.
import { afterEach, describe, expect, it } from "vitest";
import type { InspectTurnView } from "../src/protocol";
import { validateKernelMessage } from "../src/protocol";
import { fixture, mount, byLabel, status, tick } from "./helpers";

afterEach(() => {
  document.body.replaceChildren();
});

const [okReply] = fixture("inspect_reply.json") as { type: string; ok: boolean; count: number; turn: InspectTurnView }[];
const turn0 = okReply!.turn;

const deep = {
  agent_id: "deep",
  agent_name: null,
  run_id: "run_deep",
  model_call_count: 1,
  model_calls: [
    { index: 0, turn: 1, model: "m", duration_ms: 3, error: null, input_tokens: 0, output_tokens: 0, cached_tokens: null, finish_reason: "stop", response_text: "deepest <b>", tool_calls: [] },
  ],
};
const mid = {
  agent_id: "mid",
  agent_name: "Middle",
  run_id: "run_mid",
  model_call_count: 60,
  model_calls: [
    {
      index: 0,
      turn: 1,
      model: "m",
      duration_ms: 12,
      error: null,
      input_tokens: 20,
      output_tokens: 4,
      cached_tokens: null,
      finish_reason: "tool_calls",
      response_text: "asking deep",
      tool_calls: [{ name: "ask_deep", status: "success", duration_ms: 5, sub_agent: deep }],
    },
  ],
};

function reply(subAgent: unknown): Record<string, unknown> {
  const [call] = turn0.tool_calls;
  return { ...okReply!, turn: { ...turn0, tool_calls: [{ ...call!, name: "ask_mid", sub_agent: subAgent }] } };
}

function open(el: Element | null): HTMLDetailsElement {
  const details = el as HTMLDetailsElement;
  details.open = true;
  details.dispatchEvent(new Event("toggle"));
  return details;
}

describe("Inspect, a sub-agent's tool call", () => {
  it("shows the sub-agent's model calls under the tool call, nested, as text", async () => {
    const m = mount([{ kind: "user", id: "u", text: "go" }], status("success", { turn: 2 }));
    byLabel(m.root, "Inspect").click();
    m.model.kernel({ ...reply(mid), request_id: m.model.last("inspect").request_id });
    await tick();
    const panel = m.root.querySelector(".anvia-inspect") as HTMLElement;
    const calls = open(panel.querySelector(".anvia-inspect-calls"));
    const sub = calls.querySelector(".anvia-inspect-call .anvia-inspect-sub-agent") as HTMLDetailsElement;
    expect(sub.open).toBe(false); // folded until opened
    expect(sub.querySelector("summary")?.textContent).toBe("Sub-agent Middle (mid): the first 1 of 60 model calls");
    open(sub);
    const first = sub.querySelector(".anvia-inspect-sub-call") as HTMLElement;
    expect(first.querySelector(".anvia-section-label")?.textContent).toBe("Model call 1 (turn 1) · m · 12 ms · 20 in / 4 out tokens");
    expect(first.querySelector(".anvia-inspect-sub-response")?.textContent).toContain("asking deep");
    expect(first.querySelector(".anvia-inspect-sub-tool")?.textContent).toBe("ask_deep · success · 5.0 ms");
    const nested = open(first.querySelector(".anvia-inspect-sub-agent"));
    expect(nested.querySelector("summary")?.textContent).toBe("Sub-agent deep: 1 model call");
    expect(nested.querySelector(".anvia-inspect-sub-response")?.textContent).toContain("deepest <b>");
    expect(nested.querySelector("b, script")).toBeNull(); // text, never HTML
  });

  it("has no sub-agent block for a tool call that ran none", async () => {
    const m = mount([{ kind: "user", id: "u", text: "go" }], status("success", { turn: 2 }));
    byLabel(m.root, "Inspect").click();
    m.model.kernel({ ...okReply!, request_id: m.model.last("inspect").request_id });
    await tick();
    const calls = open(m.root.querySelector(".anvia-inspect-calls"));
    expect(calls.querySelector(".anvia-inspect-sub-agent")).toBeNull();
  });

  it("checks the nested views on the wire", () => {
    const good = { ...reply(mid), request_id: "r1" };
    expect(validateKernelMessage(good).ok).toBe(true);
    const badDeep = { ...deep, model_calls: [{ ...deep.model_calls[0], input_tokens: -1 }] };
    const bad = reply({ ...mid, model_calls: [{ ...mid.model_calls[0], tool_calls: [{ name: "ask_deep", status: null, duration_ms: null, sub_agent: badDeep }] }] });
    const checked = validateKernelMessage({ ...bad, request_id: "r2" });
    expect(checked.ok).toBe(false);
  });
});
