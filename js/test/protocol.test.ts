import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  APPROVAL_STATUSES,
  QUESTION_STATUSES,
  TOOL_STATUS_LABELS,
  TOOL_STATUSES,
  validateKernelMessage,
  validateMessage,
  validatePageMessage,
} from "../src/protocol";
import { FIXTURES, fixtureFiles, fixtureMessages } from "./helpers";

const valid = fixtureFiles(FIXTURES);
const invalid = fixtureFiles(join(FIXTURES, "invalid"));
const name = (p: string) => p.slice(FIXTURES.length);

const KERNEL_TYPES = ["snapshot", "batch", "reply", "studio", "evals", "evals_update", "inspect_reply"];
const PAGE_TYPES = ["sync", "approval_decision", "question_answers", "question_decline", "stop", "steer", "studio_send", "studio_select", "studio_new_session", "studio_open_session", "evals_open_case", "inspect"];

describe("protocol fixtures", () => {
  it("has fixtures", () => {
    expect(valid.length).toBeGreaterThan(10);
    expect(invalid.length).toBeGreaterThan(10);
  });

  it.each(valid.map((p) => [name(p), p]))("accepts %s", (_n, path) => {
    for (const msg of fixtureMessages(path)) {
      const r = validateMessage(msg);
      expect(r.ok ? null : r.error).toBeNull();
      const type = (msg as { type: string }).type;
      // Each direction's validator accepts exactly its own messages.
      expect(validateKernelMessage(msg).ok).toBe(KERNEL_TYPES.includes(type));
      expect(validatePageMessage(msg).ok).toBe(PAGE_TYPES.includes(type));
    }
  });

  it.each(invalid.map((p) => [name(p), p]))("rejects %s", (_n, path) => {
    for (const msg of fixtureMessages(path)) {
      expect(validateMessage(msg).ok).toBe(false);
      expect(validateKernelMessage(msg).ok).toBe(false);
      expect(validatePageMessage(msg).ok).toBe(false);
    }
  });

  it("cover every message type, op, entry kind and status of the doc", () => {
    const types = new Set<string>();
    const ops = new Set<string>();
    const kinds = new Set<string>();
    const toolStatuses = new Set<string>();
    const approvalStatuses = new Set<string>();
    const questionStatuses = new Set<string>();
    const fields = new Set<string>();
    const visitEntry = (e: Record<string, unknown>) => {
      kinds.add(e.kind as string);
      if (e.kind === "tool") visitChanges(e);
    };
    const visitChanges = (c: Record<string, unknown>) => {
      if (typeof c.status === "string") toolStatuses.add(c.status);
      const a = c.approval as { status: string } | null | undefined;
      if (a) approvalStatuses.add(a.status);
      const q = c.question as { status: string } | null | undefined;
      if (q) questionStatuses.add(q.status);
    };
    for (const path of valid) {
      for (const raw of fixtureMessages(path)) {
        const msg = raw as Record<string, unknown>;
        types.add(msg.type as string);
        if (msg.type === "snapshot") {
          for (const e of (msg.transcript as { entries: Record<string, unknown>[] }).entries) visitEntry(e);
        }
        if (msg.type === "batch") {
          for (const op of msg.ops as Record<string, unknown>[]) {
            ops.add(op.op as string);
            if (op.op === "add") visitEntry(op.entry as Record<string, unknown>);
            if (op.op === "patch") visitChanges(op.changes as Record<string, unknown>);
            if (op.op === "append") fields.add(op.field as string);
          }
        }
      }
    }
    expect([...types].sort()).toEqual([...KERNEL_TYPES, ...PAGE_TYPES].sort());
    expect([...ops].sort()).toEqual(["add", "append", "patch", "reset", "status"]);
    expect([...kinds].sort()).toEqual(["assistant", "error", "notice", "reasoning", "tool", "user"]);
    expect([...fields].sort()).toEqual(["arguments", "output", "text"]);
    expect([...toolStatuses].sort()).toEqual([...TOOL_STATUSES].sort());
    expect([...approvalStatuses].sort()).toEqual([...APPROVAL_STATUSES].sort());
    expect([...questionStatuses].sort()).toEqual([...QUESTION_STATUSES].sort());
  });
});

describe("validators", () => {
  const ok = { type: "reply", request_id: "r-1", ok: true, error: null };
  it("ignore unknown extra keys", () => {
    expect(validateMessage({ ...ok, extra: 1 }).ok).toBe(true);
  });
  it("accept an optional answer field that is absent or null", () => {
    const base = { type: "question_answers", request_id: "r", question_id: "q" };
    expect(validateMessage({ ...base, answers: [{ questionId: "a", answer: "x" }] }).ok).toBe(true);
    expect(validateMessage({ ...base, answers: [{ questionId: "a", answer: "x", choice: null, custom: null }] }).ok).toBe(true);
    expect(validateMessage({ ...base, answers: [{ questionId: "a", answer: "x", custom: "yes" }] }).ok).toBe(false);
  });
  it("name the path of the first problem", () => {
    const r = validateMessage({ type: "batch", seq: 1, ops: [{ op: "append", id: "a", field: "text", text: 1 }] });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toContain("ops[0].text");
  });
  it("reject patch changes naming a field no entry has, or kind/id", () => {
    for (const changes of [{ colour: "red" }, { kind: "user" }, { id: "x" }]) {
      expect(validateMessage({ type: "batch", seq: 1, ops: [{ op: "patch", id: "t", changes }] }).ok).toBe(false);
    }
  });
  it("reject non-JSON numbers", () => {
    const msg = { type: "approval_decision", request_id: "r", approval_id: "a", approved: true, reason: null, always_allow: false };
    expect(validateMessage({ ...msg, edited_args: { x: Number.NaN } }).ok).toBe(false);
    expect(validateMessage({ ...msg, edited_args: { x: 1 } }).ok).toBe(true);
  });
});

describe("tool status labels", () => {
  it("match the table the kernel's _protocol.py is checked against", () => {
    const shared = JSON.parse(readFileSync(join(FIXTURES, "..", "tool_status_labels.json"), "utf8")) as {
      labels: Record<string, string>;
    };
    expect(Object.entries(TOOL_STATUS_LABELS)).toEqual(Object.entries(shared.labels));
    expect(Object.keys(TOOL_STATUS_LABELS)).toEqual([...TOOL_STATUSES]);
  });
});
