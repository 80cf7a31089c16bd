// The widget wire protocol (docs/wire-protocol.md), page side: types and runtime validators.
// The types are generated from the kernel's pydantic models (./generated/wire.ts, by
// `npm run gen:wire`); this file names them for the rest of the front end and validates
// messages at run time. Each validator's shape is typed by the generated type it checks, so a
// field added to, dropped from or made optional in a model fails `npm run typecheck` until the
// validator follows.
import {
  arrayOf,
  bool,
  type Check,
  type Shape,
  count,
  isPlainObject,
  json,
  jsonObject,
  literal,
  milliseconds,
  nonEmptyStr,
  nullable,
  obj,
  optional,
  recordOf,
  shape,
  str,
  union,
} from "./validate";

import type * as W from "./generated/wire";

export type {
  AnswerView,
  ApprovalDecisionMsg,
  ApprovalView,
  AppendOp,
  AddOp,
  AssistantEntry,
  ChoiceView,
  Entry,
  ErrorEntry,
  EvalsMetricView,
  EvalsMsg,
  EvalsOpenCaseMsg,
  EvalsRowView,
  EvalsScoreView,
  EvalsState,
  EvalsSummary,
  EvalsUpdateMsg,
  InspectMessageView,
  InspectMsg,
  InspectReplyMsg,
  InspectSubAgentView,
  InspectToolCallView,
  InspectToolView,
  InspectTurnView,
  JsonValue,
  NoticeEntry,
  QuestionAnswersMsg,
  QuestionDeclineMsg,
  QuestionItemView,
  QuestionView,
  ReasoningEntry,
  ReplyMsg,
  ResetOp,
  SnapshotMsg,
  Status,
  StatusOp,
  SteerMsg,
  StopMsg,
  StudioAgent,
  StudioMsg,
  StudioNewSessionMsg,
  StudioOpenSessionMsg,
  StudioSelectMsg,
  StudioSendMsg,
  StudioSessionView,
  SyncMsg,
  ToolEntry,
  TranscriptState,
  UserEntry,
} from "./generated/wire";

/** True when A and B are the same type (used below to tie runtime lists to the generated types). */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

// ---------------------------------------------------------------- transcript state

export type Transcript = W.TranscriptState;
export type Choice = W.ChoiceView;
export type Question = W.QuestionItemView;
export type Answer = W.AnswerView;
export type JsonObject = { [key: string]: W.JsonValue };
export type EntryKind = W.Entry["kind"];

export const RUN_STATES = ["idle", "running", "waiting", "success", "error", "cancelled"] as const;
export type RunState = W.Status["state"];
export const TOOL_STATUSES = [
  "running",
  "approval_required",
  "input_required",
  "approved",
  "rejected",
  "cancelled",
  "timed_out",
  "done",
  "error",
  "skipped",
] as const;
export type ToolStatus = W.ToolEntry["status"];
export const APPROVAL_STATUSES = ["pending", "approved", "rejected", "cancelled", "timed_out"] as const;
export type ApprovalStatus = W.ApprovalView["status"];
export const DECIDERS = ["human", "handler", "policy", "timeout", "stop", "runtime"] as const;
export type Decider = NonNullable<W.ApprovalView["decided_by"]>;
export const DECIDED_VIA = ["widget", "handle", "store", "cli", "handler", "human_input"] as const;
export type DecidedVia = NonNullable<W.ApprovalView["decided_via"]>;
export const QUESTION_STATUSES = ["pending", "answered", "cancelled", "timed_out"] as const;
export type QuestionStatus = W.QuestionView["status"];
export const APPEND_FIELDS = ["text", "arguments", "output"] as const;
export type AppendField = W.AppendOp["field"];
export const EVALS_STATUSES = ["pending", "running", "done", "stopped"] as const;
export type EvalsStatus = W.EvalsSummary["status"];
export const EVALS_CASE_STATUSES = ["pending", "running", "success", "error", "cancelled"] as const;
export type EvalsCaseStatus = W.EvalsRowView["status"];

// Each list above holds exactly the values of its generated type (a compile error otherwise).
const LISTS_MATCH: [
  Same<(typeof RUN_STATES)[number], RunState>,
  Same<(typeof TOOL_STATUSES)[number], ToolStatus>,
  Same<(typeof APPROVAL_STATUSES)[number], ApprovalStatus>,
  Same<(typeof DECIDERS)[number], Decider>,
  Same<(typeof DECIDED_VIA)[number], DecidedVia>,
  Same<(typeof QUESTION_STATUSES)[number], QuestionStatus>,
  Same<(typeof APPEND_FIELDS)[number], AppendField>,
  Same<(typeof EVALS_STATUSES)[number], EvalsStatus>,
  Same<(typeof EVALS_CASE_STATUSES)[number], EvalsCaseStatus>,
] = [true, true, true, true, true, true, true, true, true];
void LISTS_MATCH;

// ---------------------------------------------------------------- kernel to page

type EntryField = W.Entry extends infer E ? (E extends W.Entry ? Exclude<keyof E, "kind" | "id"> : never) : never;
type EntryFieldType<K extends EntryField> = W.Entry extends infer E ? (E extends Record<K, infer V> ? V : never) : never;
/** Fields an entry may have (of any kind), minus `kind` and `id` (which a patch cannot change). */
export type EntryChanges = { [K in EntryField]?: EntryFieldType<K> };

/** A `patch` op; its `changes` (any JSON object on the wire) are checked field by field. */
export type PatchOp = Omit<W.PatchOp, "changes"> & { changes: EntryChanges };
export type Op = Exclude<W.Op, W.PatchOp> | PatchOp;
export type BatchMsg = Omit<W.BatchMsg, "ops"> & { ops: Op[] };
export type KernelMessage = Exclude<W.KernelMessage, W.BatchMsg> | BatchMsg;

// ---------------------------------------------------------------- page to kernel

export type PageMessage = W.InboundMessage;

/** A page message before the session stamps its request_id. */
export type PageRequest = PageMessage extends infer M
  ? M extends { request_id: string }
    ? Omit<M, "request_id">
    : never
  : never;

// ---------------------------------------------------------------- validators

const statusCheck = shape<W.Status>({
  state: literal(...RUN_STATES),
  turn: count,
  input_tokens: count,
  output_tokens: count,
  error: nullable(str),
  agent_id: str,
  run_id: optional(str),
  first_token_ms: optional(milliseconds),
  duration_ms: optional(milliseconds),
});

const approvalCheck = shape<W.ApprovalView>({
  id: nonEmptyStr,
  status: literal(...APPROVAL_STATUSES),
  reason: nullable(str),
  args: json,
  decided_by: nullable(literal(...DECIDERS)),
  decided_via: optional(literal(...DECIDED_VIA)),
  decided_at: nullable(str),
  decision_reason: nullable(str),
  edited_args: nullable(jsonObject),
  expires_at: optional(str),
  path: optional(arrayOf(str)),
  fix_required: optional(bool),
});

const answerCheck = shape<W.AnswerView>({
  questionId: str,
  answer: str,
  choice: optional(str),
  custom: optional(bool),
});

const questionCheck = shape<W.QuestionView>({
  id: nonEmptyStr,
  status: literal(...QUESTION_STATUSES),
  questions: arrayOf(
    shape<W.QuestionItemView>({
      id: str,
      question: str,
      choices: arrayOf(shape<W.ChoiceView>({ label: str, value: str })),
    }),
  ),
  answers: arrayOf(answerCheck),
  decided_by: optional(literal(...DECIDERS)),
  decided_via: optional(literal(...DECIDED_VIA)),
  expires_at: optional(str),
  path: optional(arrayOf(str)),
  declinable: optional(bool),
});

const subAgentCheck = shape<W.SubAgentView>({
  agent_id: nonEmptyStr,
  agent_name: optional(str),
  run_id: nonEmptyStr,
});

/** Checks per entry field, shared by whole entries and by `patch` changes. */
const FIELD_CHECKS: Shape<Required<EntryChanges>> = {
  text: str,
  steered: bool,
  turn: count,
  tool_name: str,
  tool_call_id: str,
  arguments: str,
  status: literal(...TOOL_STATUSES),
  result: nullable(str),
  is_error: bool,
  output: str,
  approval: nullable(approvalCheck),
  question: nullable(questionCheck),
  parent: nullable(nonEmptyStr),
  sub_agent: nullable(subAgentCheck),
  images: nullable(arrayOf(shape<W.ImageView>({ media_type: str, data: str }))),
};
/** A sub-agent's entry names the tool entry it is drawn in; a plain run's has no such key. */
const parent = optional(nonEmptyStr);

/** The fields of each entry kind, but `kind` (the union's tag). */
const f = FIELD_CHECKS;
const ENTRY_SHAPES: { [K in EntryKind]: Shape<Omit<Extract<W.Entry, { kind: K }>, "kind">> } = {
  user: { id: nonEmptyStr, text: f.text, steered: optional(f.steered), parent },
  assistant: { id: nonEmptyStr, turn: f.turn, text: f.text, parent },
  reasoning: { id: nonEmptyStr, turn: f.turn, text: f.text, parent },
  tool: {
    id: nonEmptyStr,
    turn: f.turn,
    tool_name: f.tool_name,
    tool_call_id: f.tool_call_id,
    arguments: f.arguments,
    status: f.status,
    result: f.result,
    is_error: f.is_error,
    output: f.output,
    approval: f.approval,
    question: f.question,
    parent,
    sub_agent: optional(subAgentCheck),
    images: optional(f.images),
  },
  error: { id: nonEmptyStr, text: f.text, parent },
  notice: { id: nonEmptyStr, text: f.text, parent },
};

export const entryHasField = (kind: EntryKind, field: string): boolean =>
  field !== "id" && Object.prototype.hasOwnProperty.call(ENTRY_SHAPES[kind], field);

const entryCheck = union(
  "kind",
  Object.fromEntries(Object.entries(ENTRY_SHAPES).map(([k, checks]) => [k, obj(checks as Record<string, Check>)])),
);

const FIELDS = FIELD_CHECKS as Record<string, Check>;
const changesCheck: Check = (v, p) => {
  if (!isPlainObject(v)) return `${p}: expected an object`;
  for (const [key, value] of Object.entries(v)) {
    if (!Object.prototype.hasOwnProperty.call(FIELDS, key)) return `${p}.${key}: not a field a patch can change`;
    const err = (FIELDS[key] as Check)(value, `${p}.${key}`);
    if (err) return err;
  }
  return null;
};

/** A union member's fields, but its tag (checked by `union`). */
type OpBody<T> = Omit<T, "op">;
type Msg<T> = Omit<T, "type">;

const OP_CHECKS: Record<W.Op["op"], Check> = {
  add: shape<OpBody<W.AddOp>>({ entry: entryCheck }),
  append: shape<OpBody<W.AppendOp>>({ id: nonEmptyStr, field: literal(...APPEND_FIELDS), text: str }),
  patch: shape<OpBody<W.PatchOp>>({ id: nonEmptyStr, changes: changesCheck }),
  status: shape<OpBody<W.StatusOp>>({ status: statusCheck }),
  reset: shape<OpBody<W.ResetOp>>({}),
};
const opCheck = union("op", OP_CHECKS);

const transcriptCheck = shape<W.TranscriptState>({ entries: arrayOf(entryCheck), status: statusCheck, seq: count });

/** A finite number (JSON has no NaN or infinity). */
const finite: Check = (v, p) => (typeof v === "number" && Number.isFinite(v) ? null : `${p}: expected a number`);
const scoreValue: Check = (v, p) => (v === null || typeof v === "boolean" ? null : finite(v, p));

const evalsSummaryCheck = shape<W.EvalsSummary>({
  title: str,
  status: literal(...EVALS_STATUSES),
  total: count,
  finished: count,
  errors: count,
  elapsed_ms: count,
  eta_ms: nullable(count),
  pass_rate: nullable(finite),
  metrics: arrayOf(shape<W.EvalsMetricView>({ name: str, mean: nullable(finite) })),
  open: nullable(count),
});

const evalsRowCheck = shape<W.EvalsRowView>({
  index: count,
  name: str,
  input: str,
  status: literal(...EVALS_CASE_STATUSES),
  passed: nullable(bool),
  output: str,
  error: nullable(str),
  duration_ms: nullable(count),
  tokens: nullable(count),
  run_id: nullable(str),
  scores: arrayOf(
    shape<W.EvalsScoreView>({
      metric: str,
      value: scoreValue,
      passed: nullable(bool),
      error: nullable(str),
      reason: nullable(str),
    }),
  ),
});

/** A sub-agent's run under a tool call (nested: its tool calls may have theirs). */
const inspectSubAgentCheck: Check = (v, p) =>
  shape<W.InspectSubAgentView>({
    agent_id: str,
    agent_name: nullable(str),
    run_id: str,
    model_call_count: count,
    model_calls: arrayOf(
      shape<W.InspectSubTurnView>({
        index: count,
        turn: count,
        model: nullable(str),
        duration_ms: nullable(milliseconds),
        error: nullable(str),
        input_tokens: count,
        output_tokens: count,
        cached_tokens: nullable(count),
        finish_reason: nullable(str),
        response_text: str,
        tool_calls: arrayOf(
          shape<W.InspectSubCallView>({
            name: str,
            status: nullable(str),
            duration_ms: nullable(milliseconds),
            sub_agent: optional(inspectSubAgentCheck),
          }),
        ),
      }),
    ),
  })(v, p);

const inspectTurnCheck = shape<W.InspectTurnView>({
  index: count,
  turn: count,
  model: nullable(str),
  provider: nullable(str),
  started_at: nullable(str),
  first_token_ms: nullable(milliseconds),
  duration_ms: nullable(milliseconds),
  attempts: count,
  error: nullable(str),
  input_tokens: count,
  output_tokens: count,
  cached_tokens: nullable(count),
  instructions: nullable(str),
  tools: arrayOf(shape<W.InspectToolView>({ name: str, description: str, parameters: str })),
  settings: str,
  messages: arrayOf(shape<W.InspectMessageView>({ role: str, text: str })),
  message_count: count,
  response_text: str,
  reasoning: str,
  finish_reason: nullable(str),
  response_tool_calls: str,
  tool_calls: arrayOf(
    shape<W.InspectToolCallView>({
      id: str,
      name: str,
      status: nullable(str),
      args: str,
      result: nullable(str),
      duration_ms: nullable(milliseconds),
      approval: nullable(str),
      question: nullable(str),
      traceback: optional(str),
      sub_agent: optional(inspectSubAgentCheck),
    }),
  ),
});

const KERNEL_CHECKS: Record<KernelMessage["type"], Check> = {
  snapshot: shape<Msg<W.SnapshotMsg>>({ seq: count, transcript: transcriptCheck }),
  batch: shape<Msg<W.BatchMsg>>({ seq: count, ops: arrayOf(opCheck) }),
  reply: shape<Msg<W.ReplyMsg>>({ request_id: nonEmptyStr, ok: bool, error: nullable(str) }),
  studio: shape<Msg<W.StudioMsg>>({
    agents: arrayOf(shape<W.StudioAgent>({ id: nonEmptyStr, name: str, description: nullable(str) })),
    selected: str,
    quick_prompts: recordOf(arrayOf(str)),
    busy: bool,
    sessions: optional(
      arrayOf(shape<W.StudioSessionView>({ id: nonEmptyStr, title: str, agent_id: str, updated_at: str })),
    ),
  }),
  evals: shape<Msg<W.EvalsMsg>>({
    seq: count,
    report: shape<W.EvalsState>({ summary: evalsSummaryCheck, rows: arrayOf(evalsRowCheck) }),
  }),
  evals_update: shape<Msg<W.EvalsUpdateMsg>>({ seq: count, summary: evalsSummaryCheck, rows: arrayOf(evalsRowCheck) }),
  inspect_reply: shape<Msg<W.InspectReplyMsg>>({
    request_id: nonEmptyStr,
    ok: bool,
    error: nullable(str),
    count,
    turn: nullable(inspectTurnCheck),
  }),
};

const rid = { request_id: nonEmptyStr };
const PAGE_CHECKS: Record<PageMessage["type"], Check> = {
  sync: shape<Msg<W.SyncMsg>>(rid),
  approval_decision: shape<Msg<W.ApprovalDecisionMsg>>({
    ...rid,
    approval_id: nonEmptyStr,
    approved: bool,
    reason: nullable(str),
    edited_args: nullable(jsonObject),
    always_allow: bool,
  }),
  question_answers: shape<Msg<W.QuestionAnswersMsg>>({ ...rid, question_id: nonEmptyStr, answers: arrayOf(answerCheck) }),
  question_decline: shape<Msg<W.QuestionDeclineMsg>>({ ...rid, question_id: nonEmptyStr }),
  stop: shape<Msg<W.StopMsg>>({ ...rid, reason: nullable(str) }),
  steer: shape<Msg<W.SteerMsg>>({ ...rid, text: str }),
  studio_send: shape<Msg<W.StudioSendMsg>>({ ...rid, agent_id: nonEmptyStr, text: str }),
  studio_select: shape<Msg<W.StudioSelectMsg>>({ ...rid, agent_id: nonEmptyStr }),
  studio_new_session: shape<Msg<W.StudioNewSessionMsg>>(rid),
  studio_open_session: shape<Msg<W.StudioOpenSessionMsg>>({ ...rid, session_id: nonEmptyStr }),
  evals_open_case: shape<Msg<W.EvalsOpenCaseMsg>>({ ...rid, index: count }),
  inspect: shape<Msg<W.InspectMsg>>({ ...rid, index: nullable(count) }),
};

export type Validation<T> = { ok: true; value: T } | { ok: false; error: string };

const run = <T>(check: Check, value: unknown): Validation<T> => {
  const error = check(value, "$");
  return error === null ? { ok: true, value: value as T } : { ok: false, error };
};

export const validateKernelMessage = (v: unknown): Validation<KernelMessage> =>
  run(union("type", KERNEL_CHECKS), v);

export const validatePageMessage = (v: unknown): Validation<PageMessage> =>
  run(union("type", PAGE_CHECKS), v);

/** Any message of the protocol, in either direction. */
export const validateMessage = (v: unknown): Validation<KernelMessage | PageMessage> =>
  run(union("type", { ...KERNEL_CHECKS, ...PAGE_CHECKS }), v);

export const validateEntry = (v: unknown): Validation<W.Entry> => run(entryCheck, v);

export const TOOL_STATUS_LABELS: Record<ToolStatus, string> = {
  running: "Running",
  approval_required: "Approval required",
  input_required: "Input required",
  approved: "Approved",
  rejected: "Rejected",
  cancelled: "Cancelled",
  timed_out: "Timed out",
  done: "Done",
  error: "Error",
  skipped: "Skipped",
};
