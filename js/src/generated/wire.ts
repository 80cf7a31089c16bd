// The widget wire protocol's types, generated from the kernel's pydantic models
// (anvia_notebook/notebook/_protocol.py) by way of src/generated/wire-schema.json: do not edit.
// Regenerate: `python scripts/wire_schema.py` at the repository root, then `npm run gen:wire` in js/.

/**
 * Any JSON value.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "JsonValue".
 */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | {
      [k: string]: JsonValue;
    };
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "Entry".
 */
export type Entry = UserEntry | AssistantEntry | ReasoningEntry | ToolEntry | ErrorEntry | NoticeEntry;
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "InboundMessage".
 */
export type InboundMessage =
  | SyncMsg
  | ApprovalDecisionMsg
  | QuestionAnswersMsg
  | QuestionDeclineMsg
  | StopMsg
  | SteerMsg
  | StudioSendMsg
  | StudioSelectMsg
  | StudioNewSessionMsg
  | StudioOpenSessionMsg
  | EvalsOpenCaseMsg
  | InspectMsg;
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "KernelMessage".
 */
export type KernelMessage = SnapshotMsg | BatchMsg | ReplyMsg | StudioMsg | EvalsMsg | EvalsUpdateMsg | InspectReplyMsg;
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "Op".
 */
export type Op = AddOp | AppendOp | PatchOp | StatusOp | ResetOp;

/**
 * The widget wire protocol (docs/wire-protocol.md): its types are the $defs, generated from the pydantic models in anvia_notebook/notebook/_protocol.py (do not edit). The document itself is no message.
 */
export interface Wire {}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "AddOp".
 */
export interface AddOp {
  op: "add";
  entry: UserEntry | AssistantEntry | ReasoningEntry | ToolEntry | ErrorEntry | NoticeEntry;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "UserEntry".
 */
export interface UserEntry {
  kind: "user";
  id: string;
  text: string;
  parent?: string | null;
  steered?: boolean;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "AssistantEntry".
 */
export interface AssistantEntry {
  kind: "assistant";
  id: string;
  turn: number;
  text: string;
  parent?: string | null;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "ReasoningEntry".
 */
export interface ReasoningEntry {
  kind: "reasoning";
  id: string;
  turn: number;
  text: string;
  parent?: string | null;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "ToolEntry".
 */
export interface ToolEntry {
  kind: "tool";
  id: string;
  turn: number;
  tool_name: string;
  tool_call_id: string;
  arguments: string;
  status:
    | "running"
    | "approval_required"
    | "input_required"
    | "approved"
    | "rejected"
    | "cancelled"
    | "timed_out"
    | "done"
    | "error"
    | "skipped";
  result: string | null;
  is_error: boolean;
  output: string;
  approval: ApprovalView | null;
  question: QuestionView | null;
  parent?: string | null;
  sub_agent?: SubAgentView | null;
  images?: ImageView[] | null;
}
/**
 * An approval as the page shows it (inside a tool entry).
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "ApprovalView".
 */
export interface ApprovalView {
  id: string;
  status: "pending" | "approved" | "rejected" | "cancelled" | "timed_out";
  reason: string | null;
  args: JsonValue;
  decided_by: ("human" | "handler" | "policy" | "timeout" | "stop" | "runtime") | null;
  decided_via?: ("widget" | "handle" | "store" | "cli" | "handler" | "human_input") | null;
  decided_at: string | null;
  decision_reason: string | null;
  edited_args: {
    [k: string]: JsonValue;
  } | null;
  expires_at?: string | null;
  path?: string[] | null;
  fix_required?: boolean;
  args_json?: string | null;
  edited_args_json?: string | null;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "QuestionView".
 */
export interface QuestionView {
  id: string;
  status: "pending" | "answered" | "cancelled" | "timed_out";
  questions: QuestionItemView[];
  answers: AnsweredView[];
  decided_by?: ("human" | "handler" | "policy" | "timeout" | "stop" | "runtime") | null;
  decided_via?: ("widget" | "handle" | "store" | "cli" | "handler" | "human_input") | null;
  expires_at?: string | null;
  path?: string[] | null;
  declinable?: boolean;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "QuestionItemView".
 */
export interface QuestionItemView {
  id: string;
  question: string;
  choices: ChoiceView[];
  allowCustom?: boolean;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "ChoiceView".
 */
export interface ChoiceView {
  label: string;
  value: string;
}
/**
 * An answer in a question's view; ``label`` is what the page and the saved copy show: the
 * words the person gave, a picked choice by its label ("Yes", not the value sent, "true").
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "AnsweredView".
 */
export interface AnsweredView {
  questionId: string;
  answer: string;
  choice?: string | null;
  custom?: boolean | null;
  label: string;
}
/**
 * The sub-agent a tool call runs (``agent.as_tool``): its entries have the tool entry as
 * their ``parent``.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "SubAgentView".
 */
export interface SubAgentView {
  agent_id: string;
  agent_name?: string | null;
  run_id: string;
}
/**
 * An image a tool returned (an MCP tool's), shown under its result.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "ImageView".
 */
export interface ImageView {
  media_type: string;
  data: string;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "ErrorEntry".
 */
export interface ErrorEntry {
  kind: "error";
  id: string;
  text: string;
  parent?: string | null;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "NoticeEntry".
 */
export interface NoticeEntry {
  kind: "notice";
  id: string;
  text: string;
  parent?: string | null;
}
/**
 * An answer on the wire: ``questionId``, ``answer``, optional ``choice`` and ``custom``.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "AnswerView".
 */
export interface AnswerView {
  questionId: string;
  answer: string;
  choice?: string | null;
  custom?: boolean | null;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "AppendOp".
 */
export interface AppendOp {
  op: "append";
  id: string;
  field: "text" | "arguments" | "output";
  text: string;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "ApprovalDecisionMsg".
 */
export interface ApprovalDecisionMsg {
  type: "approval_decision";
  request_id: string;
  approval_id: string;
  approved: boolean;
  reason: string | null;
  edited_args: {
    [k: string]: JsonValue;
  } | null;
  always_allow: boolean;
  edited_args_json?: string | null;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "BatchMsg".
 */
export interface BatchMsg {
  type: "batch";
  seq: number;
  ops: (AddOp | AppendOp | PatchOp | StatusOp | ResetOp)[];
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "PatchOp".
 */
export interface PatchOp {
  op: "patch";
  id: string;
  changes: {
    [k: string]: JsonValue;
  };
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "StatusOp".
 */
export interface StatusOp {
  op: "status";
  status: Status;
}
/**
 * The status line of a transcript.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "Status".
 */
export interface Status {
  state: "idle" | "running" | "waiting" | "success" | "error" | "cancelled";
  turn: number;
  input_tokens: number;
  output_tokens: number;
  error: string | null;
  agent_id: string;
  run_id?: string | null;
  first_token_ms?: number | null;
  duration_ms?: number | null;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "ResetOp".
 */
export interface ResetOp {
  op: "reset";
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "EvalsMetricView".
 */
export interface EvalsMetricView {
  name: string;
  mean: number | null;
}
/**
 * The whole report (after ``sync``); the next ``evals_update`` is ``seq + 1``.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "EvalsMsg".
 */
export interface EvalsMsg {
  type: "evals";
  seq: number;
  report: EvalsState;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "EvalsState".
 */
export interface EvalsState {
  summary: EvalsSummary;
  rows: EvalsRowView[];
}
/**
 * The report's header: progress, pass rate and the mean of each metric.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "EvalsSummary".
 */
export interface EvalsSummary {
  title: string;
  status: "pending" | "running" | "done" | "stopped";
  total: number;
  finished: number;
  errors: number;
  elapsed_ms: number;
  eta_ms: number | null;
  pass_rate: number | null;
  metrics: EvalsMetricView[];
  open: number | null;
}
/**
 * One case's row (``index`` 0-based, in case order); text fields are previews.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "EvalsRowView".
 */
export interface EvalsRowView {
  index: number;
  name: string;
  input: string;
  status: "pending" | "running" | "success" | "error" | "cancelled";
  passed: boolean | null;
  output: string;
  error: string | null;
  duration_ms: number | null;
  tokens: number | null;
  run_id: string | null;
  scores: EvalsScoreView[];
}
/**
 * One metric's score of one case.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "EvalsScoreView".
 */
export interface EvalsScoreView {
  metric: string;
  value: boolean | number | null;
  passed: boolean | null;
  error: string | null;
  reason: string | null;
}
/**
 * Show the transcript of case ``index`` of a report (it follows as a ``snapshot``).
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "EvalsOpenCaseMsg".
 */
export interface EvalsOpenCaseMsg {
  type: "evals_open_case";
  request_id: string;
  index: number;
}
/**
 * Numbered changes: the new summary and the rows that changed (at most one per ~50 ms).
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "EvalsUpdateMsg".
 */
export interface EvalsUpdateMsg {
  type: "evals_update";
  seq: number;
  summary: EvalsSummary;
  rows: EvalsRowView[];
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "SyncMsg".
 */
export interface SyncMsg {
  type: "sync";
  request_id: string;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "QuestionAnswersMsg".
 */
export interface QuestionAnswersMsg {
  type: "question_answers";
  request_id: string;
  question_id: string;
  answers: AnswerView[];
}
/**
 * Decline a question that may be declined (``QuestionView.declinable``: one an MCP server
 * asked); the server is told ``decline``.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "QuestionDeclineMsg".
 */
export interface QuestionDeclineMsg {
  type: "question_decline";
  request_id: string;
  question_id: string;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "StopMsg".
 */
export interface StopMsg {
  type: "stop";
  request_id: string;
  reason: string | null;
}
/**
 * Send ``text`` into the run in progress (``request.steer``): delivered after the current
 * turn's tool results, or before the run would end. Refused when no run goes on, or for a
 * blank text.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "SteerMsg".
 */
export interface SteerMsg {
  type: "steer";
  request_id: string;
  text: string;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "StudioSendMsg".
 */
export interface StudioSendMsg {
  type: "studio_send";
  request_id: string;
  agent_id: string;
  text: string;
}
/**
 * Show the conversation with ``agent_id`` (each agent has its own): a ``snapshot`` of it
 * and a ``studio`` naming it as ``selected`` follow.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "StudioSelectMsg".
 */
export interface StudioSelectMsg {
  type: "studio_select";
  request_id: string;
  agent_id: string;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "StudioNewSessionMsg".
 */
export interface StudioNewSessionMsg {
  type: "studio_new_session";
  request_id: string;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "StudioOpenSessionMsg".
 */
export interface StudioOpenSessionMsg {
  type: "studio_open_session";
  request_id: string;
  session_id: string;
}
/**
 * Show model call ``index`` (0 for the first; None for the latest) of the run's trace: the
 * kernel answers with ``inspect_reply``.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "InspectMsg".
 */
export interface InspectMsg {
  type: "inspect";
  request_id: string;
  index: number | null;
}
/**
 * One message of the request, as text (tool calls and results as JSON).
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "InspectMessageView".
 */
export interface InspectMessageView {
  role: string;
  text: string;
}
/**
 * The answer to ``inspect``: model call ``turn.index`` of ``count``, or why not (``ok``
 * false, ``turn`` None).
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "InspectReplyMsg".
 */
export interface InspectReplyMsg {
  type: "inspect_reply";
  request_id: string;
  ok: boolean;
  error: string | null;
  count: number;
  turn: InspectTurnView | null;
}
/**
 * One model call of a run's trace as the Inspect view shows it. Every text is bounded by
 * the kernel (cut with a note, like the static copy) and shown as text by the page.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "InspectTurnView".
 */
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
  tools: InspectToolView[];
  settings: string;
  messages: InspectMessageView[];
  message_count: number;
  response_text: string;
  reasoning: string;
  finish_reason: string | null;
  response_tool_calls: string;
  tool_calls: InspectToolCallView[];
}
/**
 * A tool the model was offered: its JSON schema as pretty-printed text.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "InspectToolView".
 */
export interface InspectToolView {
  name: string;
  description: string;
  parameters: string;
}
/**
 * A tool call the model asked for on this turn, and what came of it.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "InspectToolCallView".
 */
export interface InspectToolCallView {
  id: string;
  name: string;
  status: string | null;
  args: string;
  result: string | null;
  duration_ms: number | null;
  approval: string | null;
  question: string | null;
  traceback?: string | null;
  sub_agent?: InspectSubAgentView | null;
}
/**
 * The run of the sub-agent a tool call ran (``agent.as_tool``): its model calls (the first
 * ones, at most a few dozen; ``model_call_count`` says how many there were).
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "InspectSubAgentView".
 */
export interface InspectSubAgentView {
  agent_id: string;
  agent_name: string | null;
  run_id: string;
  model_calls: InspectSubTurnView[];
  model_call_count: number;
}
/**
 * One model call of a sub-agent's run, in short.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "InspectSubTurnView".
 */
export interface InspectSubTurnView {
  index: number;
  turn: number;
  model: string | null;
  duration_ms: number | null;
  error: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number | null;
  finish_reason: string | null;
  response_text: string;
  tool_calls: InspectSubCallView[];
}
/**
 * A tool call of a sub-agent's model call (name, status, and the sub-agent it ran, if any).
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "InspectSubCallView".
 */
export interface InspectSubCallView {
  name: string;
  status: string | null;
  duration_ms: number | null;
  sub_agent?: InspectSubAgentView | null;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "SnapshotMsg".
 */
export interface SnapshotMsg {
  type: "snapshot";
  seq: number;
  transcript: TranscriptState;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "TranscriptState".
 */
export interface TranscriptState {
  entries: (UserEntry | AssistantEntry | ReasoningEntry | ToolEntry | ErrorEntry | NoticeEntry)[];
  status: Status;
  seq: number;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "ReplyMsg".
 */
export interface ReplyMsg {
  type: "reply";
  request_id: string;
  ok: boolean;
  error: string | null;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "StudioMsg".
 */
export interface StudioMsg {
  type: "studio";
  agents: StudioAgent[];
  selected: string;
  quick_prompts: {
    [k: string]: string[];
  };
  busy: boolean;
  sessions?: StudioSessionView[] | null;
}
/**
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "StudioAgent".
 */
export interface StudioAgent {
  id: string;
  name: string;
  description: string | null;
}
/**
 * An earlier stored Studio session the page offers to open.
 *
 * This interface was referenced by `Wire`'s JSON-Schema
 * via the `definition` "StudioSessionView".
 */
export interface StudioSessionView {
  id: string;
  title: string;
  agent_id: string;
  updated_at: string;
}
