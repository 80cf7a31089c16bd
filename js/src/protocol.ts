// The widget wire protocol (docs/wire-protocol.md), page side: types and runtime validators.
// This is the single definition of the protocol in the front end.
import {
  arrayOf,
  bool,
  type Check,
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
  str,
  union,
} from "./validate";

// ---------------------------------------------------------------- transcript state

export const RUN_STATES = ["idle", "running", "waiting", "success", "error", "cancelled"] as const;
export type RunState = (typeof RUN_STATES)[number];

export interface Status {
  state: RunState;
  turn: number;
  input_tokens: number;
  output_tokens: number;
  error: string | null;
  agent_id: string;
  /** The run shown (a Studio's latest); absent or null before the first run. */
  run_id?: string | null;
  /** Once the run has ended (from its trace): ms to the first token, and of the whole run. */
  first_token_ms?: number | null;
  duration_ms?: number | null;
}

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
export type ToolStatus = (typeof TOOL_STATUSES)[number];

export const APPROVAL_STATUSES = ["pending", "approved", "rejected", "cancelled", "timed_out"] as const;
export type ApprovalStatus = (typeof APPROVAL_STATUSES)[number];
export const DECIDERS = ["you", "handler", "policy", "runtime", "auto"] as const;
export type Decider = (typeof DECIDERS)[number];

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
export type JsonObject = { [key: string]: JsonValue };

export interface ApprovalView {
  id: string;
  status: ApprovalStatus;
  reason: string | null;
  args: JsonValue;
  decided_by: Decider | null;
  decided_at: string | null;
  decision_reason: string | null;
  edited_args: JsonObject | null;
  /** While pending with a time limit: when it times out (ISO time). Added later: may be absent. */
  expires_at?: string | null;
}

export const QUESTION_STATUSES = ["pending", "answered", "cancelled", "timed_out"] as const;
export type QuestionStatus = (typeof QUESTION_STATUSES)[number];

export interface Choice {
  label: string;
  value: string;
}
export interface Question {
  id: string;
  question: string;
  choices: Choice[];
}
export interface Answer {
  questionId: string;
  answer: string;
  choice?: string | null;
  custom?: boolean | null;
}
export interface QuestionView {
  id: string;
  status: QuestionStatus;
  questions: Question[];
  answers: Answer[];
  /** While pending with a time limit: when it times out (ISO time). Added later: may be absent. */
  expires_at?: string | null;
}

export interface UserEntry {
  kind: "user";
  id: string;
  text: string;
}
export interface AssistantEntry {
  kind: "assistant";
  id: string;
  turn: number;
  text: string;
}
export interface ReasoningEntry {
  kind: "reasoning";
  id: string;
  turn: number;
  text: string;
}
export interface ToolEntry {
  kind: "tool";
  id: string;
  turn: number;
  tool_name: string;
  tool_call_id: string;
  arguments: string;
  status: ToolStatus;
  result: string | null;
  is_error: boolean;
  output: string;
  approval: ApprovalView | null;
  question: QuestionView | null;
}
export interface ErrorEntry {
  kind: "error";
  id: string;
  text: string;
}
export interface NoticeEntry {
  kind: "notice";
  id: string;
  text: string;
}
export type Entry = UserEntry | AssistantEntry | ReasoningEntry | ToolEntry | ErrorEntry | NoticeEntry;
export type EntryKind = Entry["kind"];

export interface Transcript {
  entries: Entry[];
  status: Status;
  seq: number;
}

// ---------------------------------------------------------------- kernel to page

export const APPEND_FIELDS = ["text", "arguments", "output"] as const;
export type AppendField = (typeof APPEND_FIELDS)[number];

/** Fields an entry may have, minus `kind` and `id` (which a patch cannot change). */
export type EntryChanges = Partial<Omit<UserEntry, "kind" | "id">> &
  Partial<Omit<AssistantEntry, "kind" | "id">> &
  Partial<Omit<ToolEntry, "kind" | "id">>;

export type Op =
  | { op: "add"; entry: Entry }
  | { op: "append"; id: string; field: AppendField; text: string }
  | { op: "patch"; id: string; changes: EntryChanges }
  | { op: "status"; status: Status }
  | { op: "reset" };

export interface StudioAgent {
  id: string;
  name: string;
  description: string | null;
}

/** An earlier stored Studio session the page offers to open. */
export interface StudioSessionView {
  id: string;
  title: string;
  agent_id: string;
  /** ISO date and time of its last run. */
  updated_at: string;
}

export type SnapshotMsg = { type: "snapshot"; seq: number; transcript: Transcript };
export type BatchMsg = { type: "batch"; seq: number; ops: Op[] };
export type ReplyMsg = { type: "reply"; request_id: string; ok: boolean; error: string | null };
export type StudioMsg = {
  type: "studio";
  agents: StudioAgent[];
  selected: string;
  quick_prompts: Record<string, string[]>;
  busy: boolean;
  /** Earlier stored sessions, newest first (absent or null: none). */
  sessions?: StudioSessionView[] | null;
};
// ---------------------------------------------------------------- evals (a report's widget)

export const EVALS_STATUSES = ["pending", "running", "done", "stopped"] as const;
export type EvalsStatus = (typeof EVALS_STATUSES)[number];
export const EVALS_CASE_STATUSES = ["pending", "running", "success", "error", "cancelled"] as const;
export type EvalsCaseStatus = (typeof EVALS_CASE_STATUSES)[number];

/** One metric's score of one case: a bool, a number, or null (failed or not scored). */
export interface EvalsScoreView {
  metric: string;
  value: boolean | number | null;
  passed: boolean | null;
  error: string | null;
  reason: string | null;
}
/** One case's row (`index` 0-based, in case order); text fields are previews. */
export interface EvalsRowView {
  index: number;
  name: string;
  input: string;
  status: EvalsCaseStatus;
  passed: boolean | null;
  output: string;
  error: string | null;
  duration_ms: number | null;
  tokens: number | null;
  run_id: string | null;
  scores: EvalsScoreView[];
}
export interface EvalsSummary {
  title: string;
  status: EvalsStatus;
  total: number;
  finished: number;
  errors: number;
  elapsed_ms: number;
  eta_ms: number | null;
  pass_rate: number | null;
  metrics: { name: string; mean: number | null }[];
  /** The case whose transcript the widget shows, or null. */
  open: number | null;
}
export type EvalsMsg = { type: "evals"; seq: number; report: { summary: EvalsSummary; rows: EvalsRowView[] } };
export type EvalsUpdateMsg = { type: "evals_update"; seq: number; summary: EvalsSummary; rows: EvalsRowView[] };

/** One model call of a run's trace, as the Inspect view shows it (texts bounded by the kernel). */
export interface InspectTurnView {
  index: number;
  turn: number;
  model: string | null;
  provider: string | null;
  started_at: string | null;
  first_token_ms: number | null;
  duration_ms: number | null;
  attempts: number;
  error: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number | null;
  instructions: string | null;
  /** The tools offered, each with its JSON schema as pretty-printed text. */
  tools: { name: string; description: string; parameters: string }[];
  settings: string;
  /** The last messages of the request, and how many there were. */
  messages: { role: string; text: string }[];
  message_count: number;
  response_text: string;
  reasoning: string;
  finish_reason: string | null;
  response_tool_calls: string;
  tool_calls: {
    id: string;
    name: string;
    status: string | null;
    args: string;
    result: string | null;
    duration_ms: number | null;
    approval: string | null;
    question: string | null;
    /** When the tool raised: the exception's type and traceback (the model saw only the result). */
    traceback?: string | null;
  }[];
}
export type InspectReplyMsg = {
  type: "inspect_reply";
  request_id: string;
  ok: boolean;
  error: string | null;
  /** How many model calls the run made. */
  count: number;
  turn: InspectTurnView | null;
};

export type KernelMessage = SnapshotMsg | BatchMsg | ReplyMsg | StudioMsg | EvalsMsg | EvalsUpdateMsg | InspectReplyMsg;

// ---------------------------------------------------------------- page to kernel

export type SyncMsg = { type: "sync"; request_id: string };
export type ApprovalDecisionMsg = {
  type: "approval_decision";
  request_id: string;
  approval_id: string;
  approved: boolean;
  reason: string | null;
  edited_args: JsonObject | null;
  always_allow: boolean;
};
export type QuestionAnswersMsg = {
  type: "question_answers";
  request_id: string;
  question_id: string;
  answers: Answer[];
};
export type StopMsg = { type: "stop"; request_id: string; reason: string | null };
export type StudioSendMsg = { type: "studio_send"; request_id: string; agent_id: string; text: string };
/** Show the conversation with `agent_id` (each agent has its own): a snapshot of it follows. */
export type StudioSelectMsg = { type: "studio_select"; request_id: string; agent_id: string };
export type StudioNewSessionMsg = { type: "studio_new_session"; request_id: string };
export type StudioOpenSessionMsg = { type: "studio_open_session"; request_id: string; session_id: string };
export type EvalsOpenCaseMsg = { type: "evals_open_case"; request_id: string; index: number };
/** Ask for model call `index` of the run's trace (null: the latest); answered by `inspect_reply`. */
export type InspectMsg = { type: "inspect"; request_id: string; index: number | null };
export type PageMessage =
  | InspectMsg
  | SyncMsg
  | ApprovalDecisionMsg
  | QuestionAnswersMsg
  | StopMsg
  | StudioSendMsg
  | StudioSelectMsg
  | StudioNewSessionMsg
  | StudioOpenSessionMsg
  | EvalsOpenCaseMsg;

/** A page message before the session stamps its request_id. */
export type PageRequest = PageMessage extends infer M
  ? M extends { request_id: string }
    ? Omit<M, "request_id">
    : never
  : never;

// ---------------------------------------------------------------- validators

const statusCheck = obj({
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

const approvalCheck = obj({
  id: nonEmptyStr,
  status: literal(...APPROVAL_STATUSES),
  reason: nullable(str),
  args: json,
  decided_by: nullable(literal(...DECIDERS)),
  decided_at: nullable(str),
  decision_reason: nullable(str),
  edited_args: nullable(jsonObject),
  expires_at: optional(str),
});

const answerCheck = obj({
  questionId: str,
  answer: str,
  choice: optional(str),
  custom: optional(bool),
});

const questionCheck = obj({
  id: nonEmptyStr,
  status: literal(...QUESTION_STATUSES),
  questions: arrayOf(
    obj({ id: str, question: str, choices: arrayOf(obj({ label: str, value: str })) }),
  ),
  answers: arrayOf(answerCheck),
  expires_at: optional(str),
});

/** Checks per entry field, shared by whole entries and by `patch` changes. */
const FIELD_CHECKS: Record<string, Check> = {
  text: str,
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
};

const ENTRY_FIELDS: Record<EntryKind, readonly string[]> = {
  user: ["text"],
  assistant: ["turn", "text"],
  reasoning: ["turn", "text"],
  tool: [
    "turn",
    "tool_name",
    "tool_call_id",
    "arguments",
    "status",
    "result",
    "is_error",
    "output",
    "approval",
    "question",
  ],
  error: ["text"],
  notice: ["text"],
};

export const entryHasField = (kind: EntryKind, field: string): boolean =>
  ENTRY_FIELDS[kind].includes(field);

const entryShape = (kind: EntryKind): Check =>
  obj({
    id: nonEmptyStr,
    ...Object.fromEntries(ENTRY_FIELDS[kind].map((f) => [f, FIELD_CHECKS[f] as Check])),
  });

const entryCheck = union(
  "kind",
  Object.fromEntries(Object.keys(ENTRY_FIELDS).map((k) => [k, entryShape(k as EntryKind)])),
);

const changesCheck: Check = (v, p) => {
  if (!isPlainObject(v)) return `${p}: expected an object`;
  for (const [key, value] of Object.entries(v)) {
    const check = FIELD_CHECKS[key];
    if (!check) return `${p}.${key}: not a field a patch can change`;
    const err = check(value, `${p}.${key}`);
    if (err) return err;
  }
  return null;
};

const opCheck = union("op", {
  add: obj({ entry: entryCheck }),
  append: obj({ id: nonEmptyStr, field: literal(...APPEND_FIELDS), text: str }),
  patch: obj({ id: nonEmptyStr, changes: changesCheck }),
  status: obj({ status: statusCheck }),
  reset: obj({}),
});

const transcriptCheck = obj({ entries: arrayOf(entryCheck), status: statusCheck, seq: count });

/** A finite number (JSON has no NaN or infinity). */
const finite: Check = (v, p) => (typeof v === "number" && Number.isFinite(v) ? null : `${p}: expected a number`);
const scoreValue: Check = (v, p) => (v === null || typeof v === "boolean" ? null : finite(v, p));

const evalsSummaryCheck = obj({
  title: str,
  status: literal(...EVALS_STATUSES),
  total: count,
  finished: count,
  errors: count,
  elapsed_ms: count,
  eta_ms: nullable(count),
  pass_rate: nullable(finite),
  metrics: arrayOf(obj({ name: str, mean: nullable(finite) })),
  open: nullable(count),
});

const evalsRowCheck = obj({
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
    obj({ metric: str, value: scoreValue, passed: nullable(bool), error: nullable(str), reason: nullable(str) }),
  ),
});

const inspectTurnCheck = obj({
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
  tools: arrayOf(obj({ name: str, description: str, parameters: str })),
  settings: str,
  messages: arrayOf(obj({ role: str, text: str })),
  message_count: count,
  response_text: str,
  reasoning: str,
  finish_reason: nullable(str),
  response_tool_calls: str,
  tool_calls: arrayOf(
    obj({
      id: str,
      name: str,
      status: nullable(str),
      args: str,
      result: nullable(str),
      duration_ms: nullable(milliseconds),
      approval: nullable(str),
      question: nullable(str),
    }),
  ),
});

const KERNEL_CHECKS: Record<KernelMessage["type"], Check> = {
  snapshot: obj({ seq: count, transcript: transcriptCheck }),
  batch: obj({ seq: count, ops: arrayOf(opCheck) }),
  reply: obj({ request_id: nonEmptyStr, ok: bool, error: nullable(str) }),
  studio: obj({
    agents: arrayOf(obj({ id: nonEmptyStr, name: str, description: nullable(str) })),
    selected: str,
    quick_prompts: recordOf(arrayOf(str)),
    busy: bool,
    sessions: optional(arrayOf(obj({ id: nonEmptyStr, title: str, agent_id: str, updated_at: str }))),
  }),
  evals: obj({ seq: count, report: obj({ summary: evalsSummaryCheck, rows: arrayOf(evalsRowCheck) }) }),
  evals_update: obj({ seq: count, summary: evalsSummaryCheck, rows: arrayOf(evalsRowCheck) }),
  inspect_reply: obj({
    request_id: nonEmptyStr,
    ok: bool,
    error: nullable(str),
    count,
    turn: nullable(inspectTurnCheck),
  }),
};

const rid = { request_id: nonEmptyStr };
const PAGE_CHECKS: Record<PageMessage["type"], Check> = {
  sync: obj(rid),
  approval_decision: obj({
    ...rid,
    approval_id: nonEmptyStr,
    approved: bool,
    reason: nullable(str),
    edited_args: nullable(jsonObject),
    always_allow: bool,
  }),
  question_answers: obj({ ...rid, question_id: nonEmptyStr, answers: arrayOf(answerCheck) }),
  stop: obj({ ...rid, reason: nullable(str) }),
  studio_send: obj({ ...rid, agent_id: nonEmptyStr, text: str }),
  studio_select: obj({ ...rid, agent_id: nonEmptyStr }),
  studio_new_session: obj(rid),
  studio_open_session: obj({ ...rid, session_id: nonEmptyStr }),
  evals_open_case: obj({ ...rid, index: count }),
  inspect: obj({ ...rid, index: nullable(count) }),
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

export const validateEntry = (v: unknown): Validation<Entry> => run(entryCheck, v);

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
