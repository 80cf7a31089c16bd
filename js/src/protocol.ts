// The widget wire protocol (docs/wire-protocol.md), page side: types and runtime validators.
// The types are generated from the JSON Schema of the kernel's pydantic models
// (./generated/wire.ts from ./generated/wire-schema.json, by `npm run gen:wire`); this file names
// them for the rest of the front end and validates messages at run time against that same schema
// (validate.ts), so a field added to, dropped from or made optional in a model changes the types
// and the checks together.
import WIRE_SCHEMA from "./generated/wire-schema.json";
import { type Schema, schemaCheck } from "./validate";

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

/** The protocol's JSON Schema: its models and unions by name. */
const RAW = (WIRE_SCHEMA as unknown as { $defs: Record<string, Schema> }).$defs;

// ---------------------------------------------------------------- transcript state

export type Transcript = W.TranscriptState;
export type Choice = W.ChoiceView;
export type Question = W.QuestionItemView;
export type Answer = W.AnswerView;
export type JsonObject = { [key: string]: W.JsonValue };
export type EntryKind = W.Entry["kind"];

export type RunState = W.Status["state"];
export type ToolStatus = W.ToolEntry["status"];
/** The values of a model's enum field, in the schema's order. */
const valuesOf = <T>(model: string, field: string): readonly T[] => RAW[model]!.properties![field]!.enum as T[];
export const TOOL_STATUSES = valuesOf<ToolStatus>("ToolEntry", "status");
export type ApprovalStatus = W.ApprovalView["status"];
export const APPROVAL_STATUSES = valuesOf<ApprovalStatus>("ApprovalView", "status");
export type Decider = NonNullable<W.ApprovalView["decided_by"]>;
export type DecidedVia = NonNullable<W.ApprovalView["decided_via"]>;
export type QuestionStatus = W.QuestionView["status"];
export const QUESTION_STATUSES = valuesOf<QuestionStatus>("QuestionView", "status");
export type AppendField = W.AppendOp["field"];
export type EvalsStatus = W.EvalsSummary["status"];
export type EvalsCaseStatus = W.EvalsRowView["status"];

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

// Messages are checked against the JSON Schema the types above are generated from.
const mappingOf = (name: string): Record<string, string> => RAW[name]!.discriminator!.mapping;
/** Each entry kind's schema name (`tool` → `#/$defs/ToolEntry`). */
const ENTRY_SCHEMAS = mappingOf("Entry");
const entryProperties = (kind: string): Record<string, Schema> =>
  RAW[ENTRY_SCHEMAS[kind]!.split("/").pop()!]!.properties!;

// On the wire a patch's `changes` is any JSON object; here each key must be a field some entry
// kind has (but `kind` and `id`, which a patch cannot change) and is checked as that field.
const CHANGES: Schema = { type: "object", properties: {}, additionalProperties: false };
for (const kind of Object.keys(ENTRY_SCHEMAS)) {
  const { kind: _kind, id: _id, ...fields } = entryProperties(kind);
  Object.assign(CHANGES.properties!, fields);
}
const DEFS: Record<string, Schema> = {
  ...RAW,
  PatchOp: { ...RAW.PatchOp, properties: { ...RAW.PatchOp!.properties, changes: CHANGES } },
};

export const entryHasField = (kind: EntryKind, field: string): boolean =>
  field !== "id" && field !== "kind" && Object.prototype.hasOwnProperty.call(entryProperties(kind), field);

export type Validation<T> = { ok: true; value: T } | { ok: false; error: string };

const validator = <T>(schema: Schema) => {
  const check = schemaCheck(DEFS, schema);
  return (value: unknown): Validation<T> => {
    const error = check(value);
    return error === null ? { ok: true, value: value as T } : { ok: false, error };
  };
};
const byType = (...unions: string[]): Schema => ({
  discriminator: { propertyName: "type", mapping: Object.assign({}, ...unions.map(mappingOf)) },
});

export const validateKernelMessage = validator<KernelMessage>(byType("KernelMessage"));

export const validatePageMessage = validator<PageMessage>(byType("InboundMessage"));

/** Any message of the protocol, in either direction. */
export const validateMessage = validator<KernelMessage | PageMessage>(byType("KernelMessage", "InboundMessage"));

export const validateEntry = validator<W.Entry>({ $ref: "#/$defs/Entry" });

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
