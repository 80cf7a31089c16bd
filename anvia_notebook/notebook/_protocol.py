"""The widget wire protocol, kernel side: one pydantic model per message and entry.

``docs/wire-protocol.md`` is the contract; the page's types are generated from these models
(``python scripts/wire_schema.py``, then ``npm run gen:wire`` in js/) and its validators live in
``js/src/protocol.ts`` (must match). The JSON files in ``tests/fixtures/protocol/`` are checked
by both test suites.

Models are strict (no coercion: ``"1"`` is not an int), unknown extra keys are ignored, like on
the page. The kernel builds outbound messages as plain dicts (cheap per text delta) with the
helpers at the bottom, but for the view of an approval or a question, which its model makes from
the record (:func:`interaction_view`, the one serialiser); the tests validate them with
:func:`parse_outbound`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, TypeVar, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_validator,
)

from .._util import quoted
from ..errors import ProtocolError
from ..question_types import Question, describe_validation_error
from ..records import (
    ApprovalRecord,
    ApprovalStatus,
    DecidedBy,
    DecidedVia,
    QuestionRecord,
    QuestionStatus,
)
from ._exact_json import exact_json, has_unsafe_integer, json_object
from ._wire_text import invalid_text

__all__ = [
    "APPEND_FIELDS",
    "DECIDED_VIA",
    "DECIDERS",
    "ENTRY_FIELDS",
    "NO_REQUEST_ID",
    "TOOL_STATUS_LABELS",
    "AddOp",
    "AnswerView",
    "AnsweredView",
    "AppendOp",
    "ApprovalDecisionMsg",
    "ApprovalView",
    "AssistantEntry",
    "BatchMsg",
    "ChoiceView",
    "Entry",
    "ErrorEntry",
    "EvalsMsg",
    "EvalsOpenCaseMsg",
    "EvalsRowView",
    "EvalsScoreView",
    "EvalsState",
    "EvalsSummary",
    "EvalsUpdateMsg",
    "InboundMessage",
    "InspectMessageView",
    "InspectMsg",
    "InspectReplyMsg",
    "InspectToolCallView",
    "InspectToolView",
    "InspectTurnView",
    "KernelMessage",
    "NoticeEntry",
    "Op",
    "PatchOp",
    "ProtocolError",
    "QuestionAnswersMsg",
    "QuestionDeclineMsg",
    "QuestionItemView",
    "QuestionView",
    "ReasoningEntry",
    "ReplyMsg",
    "ResetOp",
    "RunStateName",
    "SnapshotMsg",
    "Status",
    "StatusOp",
    "SteerMsg",
    "StopMsg",
    "StudioAgent",
    "StudioMsg",
    "StudioNewSessionMsg",
    "StudioOpenSessionMsg",
    "StudioSelectMsg",
    "StudioSendMsg",
    "StudioSessionView",
    "SyncMsg",
    "ToolEntry",
    "ToolStatus",
    "TranscriptState",
    "UserEntry",
    "batch_message",
    "inspect_reply_message",
    "interaction_view",
    "parse_inbound",
    "parse_message",
    "parse_outbound",
    "reply_message",
    "snapshot_message",
]

#: The ``request_id`` of a reply to a message that had no usable one (the page ignores it).
NO_REQUEST_ID = "unknown"

RunStateName = Literal["idle", "running", "waiting", "success", "error", "cancelled"]
ToolStatus = Literal[
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
]
#: How the page labels each tool status (must match ``TOOL_STATUS_LABELS`` in js/src/protocol.ts).
TOOL_STATUS_LABELS: dict[str, str] = {
    "running": "Running",
    "approval_required": "Approval required",
    "input_required": "Input required",
    "approved": "Approved",
    "rejected": "Rejected",
    "cancelled": "Cancelled",
    "timed_out": "Timed out",
    "done": "Done",
    "error": "Error",
    "skipped": "Skipped",
}
#: Who decided an interaction and from where: the record's own values (records.py).
Decider = DecidedBy
DECIDERS: tuple[str, ...] = get_args(DecidedBy)
DECIDED_VIA: tuple[str, ...] = get_args(DecidedVia)
AppendField = Literal["text", "arguments", "output"]
APPEND_FIELDS: tuple[str, ...] = ("text", "arguments", "output")

NonNegative = Annotated[int, Field(ge=0)]
NonEmpty = Annotated[str, Field(min_length=1)]
#: A duration: a finite number of milliseconds, at least 0 (an int or a float).
Milliseconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Model(BaseModel):
    model_config = ConfigDict(strict=True, extra="ignore", frozen=True)


#: The base of every model of the protocol (package-internal: the wire schema lists the models
#: by it).
WireModel = _Model


# ---------------------------------------------------------------- transcript state


class Status(_Model):
    """The status line of a transcript."""

    state: RunStateName
    turn: NonNegative
    input_tokens: NonNegative
    output_tokens: NonNegative
    error: str | None
    agent_id: str
    #: The run shown (the last one in a Studio); absent or None before the first run. A view
    #: whose kernel stopped names it (``agent.resume(run_id)``).
    run_id: str | None = None
    #: The run summary once it has ended (from its trace): milliseconds to the first token of
    #: the first model call, and the whole run. Absent or None before.
    first_token_ms: Milliseconds | None = None
    duration_ms: Milliseconds | None = None


def _iso(value: Any) -> Any:
    return value.isoformat() if isinstance(value, datetime) else value


#: A time on the wire: ISO text (made from the record's ``datetime``).
IsoTime = Annotated[str, BeforeValidator(_iso)]


_View = TypeVar("_View", bound="_RecordView")


class _RecordView(_Model):
    """The page's view of an interaction record (see :func:`interaction_view`)."""

    @classmethod
    def _of(cls: type[_View], record: ApprovalRecord | QuestionRecord, **own: Any) -> _View:
        """The view of ``record``: pydantic copies the record's values of the view's field
        names, and ``own`` gives the rest. Left unset (absent on the wire) when they say
        nothing: ``expires_at`` but while pending with a time limit, ``path`` but for a
        sub-agent's interaction (the agents from the top-level run down), a flag that is
        false."""
        values = vars(record)  # (not ``getattr``/``hasattr``: a miss on a model is costly)
        unsaid = {
            "expires_at": not record.pending or record.expires_at is None,
            "path": len(record.path) <= 1,
            "fix_required": not values.get("fix_required"),
            "declinable": not values.get("declinable"),
        }
        names = [n for n in cls.model_fields if n in values and not unsaid.get(n)]
        data = {name: values[name] for name in names}
        return cls.model_validate({**data, **own}, from_attributes=True)

    def wire(self) -> dict[str, Any]:
        """The view as the page gets it: fresh JSON values (arguments that are not JSON, e.g.
        a time, as pydantic writes them; anything it cannot, as its string), and the fields
        the record leaves unset absent."""
        return self.model_dump(mode="json", exclude_unset=True, fallback=str)


class ApprovalView(_RecordView):
    """An approval as the page shows it (inside a tool entry)."""

    id: NonEmpty
    status: ApprovalStatus
    reason: str | None
    args: Any
    decided_by: Decider | None
    #: Where the decision came from (the widget, ``RunHandle``, the run store, the command
    #: line, the approval handler, the human input); absent or None when not known.
    decided_via: DecidedVia | None = None
    decided_at: IsoTime | None
    decision_reason: str | None
    edited_args: dict[str, Any] | None
    #: While pending with a time limit (``show(timeout=...)``): when it times out (ISO time).
    expires_at: IsoTime | None = None
    #: A sub-agent's approval: the agents from the top-level run down (absent for the run's own).
    path: list[str] | None = None
    #: The arguments failed validation (a typed output): the form opens its editor, and
    #: approving needs arguments that validate (the fix).
    fix_required: bool = False
    #: ``args`` and ``edited_args`` as JSON text, sent only when they hold a whole number
    #: JavaScript's numbers would round (past 2**53: a 64-bit id): the page shows these texts.
    args_json: str | None = None
    edited_args_json: str | None = None

    @classmethod
    def from_record(cls, record: ApprovalRecord) -> ApprovalView:
        """``decided_at`` is the record's ``resolved_at`` once decided; the edited arguments
        are an object's (its keys strings, as JSON has them) or None."""
        edited = record.edited_args
        exact = {
            name: exact_json(value)
            for name, value in (("args_json", record.args), ("edited_args_json", edited))
            if has_unsafe_integer(value)
        }
        return cls._of(
            record,
            decided_at=None if record.pending else record.resolved_at,
            edited_args={str(k): v for k, v in edited.items()}
            if isinstance(edited, dict)
            else None,
            **exact,
        )


class ChoiceView(_Model):
    label: str
    value: str


class QuestionItemView(_Model):
    id: str
    question: str
    choices: list[ChoiceView]
    #: False for a question only one of its choices answers (an MCP server's form field of
    #: fixed values: an enum, a boolean), whose custom answer the kernel refuses: the form shows
    #: no custom answer box. Absent (true) otherwise, as before the field existed. Anvia's
    #: ``allowCustom``.
    allowCustom: bool = True

    @staticmethod
    def of(question: Question) -> dict[str, Any]:
        """What the view is made of (its ``answer_schema`` is no field of the view; pydantic
        reads the choices), ``allowCustom`` left out (absent on the wire) but when it is
        false. A mapping, not the question itself: pydantic would look up the question's
        ``allowCustom`` attribute, a costly miss."""
        data = {"id": question.id, "question": question.question, "choices": question.choices}
        return data if question.allows_custom else {**data, "allowCustom": False}


class AnswerView(_Model):
    """An answer on the wire: ``questionId``, ``answer``, optional ``choice`` and ``custom``."""

    questionId: str
    answer: str
    choice: str | None = None
    custom: bool | None = None


class AnsweredView(AnswerView):
    """An answer in a question's view; ``label`` is what the page and the saved copy show: the
    words the person gave, a picked choice by its label ("Yes", not the value sent, "true")."""

    label: str


class QuestionView(_RecordView):
    id: NonEmpty
    status: QuestionStatus
    questions: list[QuestionItemView]
    answers: list[AnsweredView]
    decided_by: Decider | None = None
    decided_via: DecidedVia | None = None
    #: While pending with a time limit (``show(timeout=...)``): when it times out (ISO time).
    expires_at: IsoTime | None = None
    #: A sub-agent's question: the agents from the top-level run down (absent for the run's own).
    path: list[str] | None = None
    #: The person may decline it (a question an MCP server asked): the form shows Decline.
    declinable: bool = False

    @classmethod
    def from_record(cls, record: QuestionRecord) -> QuestionView:
        """The questions are the record's as the page shows them (:meth:`QuestionItemView.of`),
        the answers in their wire form with their labels (a value's first choice's; a choice's
        value is never blank)."""
        labels = {(q.id, c.value): c.label for q in record.questions for c in reversed(q.choices)}
        shown = [(a, labels.get((a.question_id, a.choice or ""), a.answer)) for a in record.answers]
        return cls._of(
            record,
            questions=[QuestionItemView.of(q) for q in record.questions],
            answers=[{**answer.to_wire(), "label": label} for answer, label in shown],
        )


def interaction_view(record: ApprovalRecord | QuestionRecord) -> dict[str, Any]:
    """The wire view (``ApprovalView`` or ``QuestionView``) of an interaction record, as the
    page gets it: the one serialiser, so the page shows exactly what the record says.

    The view model is validated as it is built (strict, in pydantic's core: cheaper than
    ``model_construct``, measured by ``benchmarks/interaction_view_bench.py``)."""
    if isinstance(record, QuestionRecord):
        return QuestionView.from_record(record).wire()
    return ApprovalView.from_record(record).wire()


class SubAgentView(_Model):
    """The sub-agent a tool call runs (``agent.as_tool``): its entries have the tool entry as
    their ``parent``."""

    agent_id: NonEmpty
    agent_name: str | None = None
    run_id: NonEmpty


class UserEntry(_Model):
    kind: Literal["user"]
    id: NonEmpty
    text: str
    #: A sub-agent's entry: the id of the tool entry it is drawn in (absent: top level).
    parent: NonEmpty | None = None
    #: True for a message steered into the run while it went (``steer``), shown where the
    #: run delivered it; absent or False for a prompt.
    steered: bool = False


class AssistantEntry(_Model):
    kind: Literal["assistant"]
    id: NonEmpty
    turn: NonNegative
    text: str
    #: A sub-agent's entry: the id of the tool entry it is drawn in (absent: top level).
    parent: NonEmpty | None = None


class ReasoningEntry(_Model):
    kind: Literal["reasoning"]
    id: NonEmpty
    turn: NonNegative
    text: str
    #: A sub-agent's entry: the id of the tool entry it is drawn in (absent: top level).
    parent: NonEmpty | None = None


class ImageView(_Model):
    """An image a tool returned (an MCP tool's), shown under its result."""

    media_type: str
    #: The image, base64-encoded.
    data: str


class ToolEntry(_Model):
    kind: Literal["tool"]
    id: NonEmpty
    turn: NonNegative
    tool_name: str
    tool_call_id: str
    arguments: str
    status: ToolStatus
    result: str | None
    is_error: bool
    output: str
    approval: ApprovalView | None
    question: QuestionView | None
    #: A sub-agent's entry: the id of the tool entry it is drawn in (absent: top level).
    parent: NonEmpty | None = None
    #: The sub-agent this call runs, once its first event came (absent: a plain tool).
    sub_agent: SubAgentView | None = None
    #: Images the tool returned besides its text (present only when there are some).
    images: list[ImageView] | None = None


class ErrorEntry(_Model):
    kind: Literal["error"]
    id: NonEmpty
    text: str
    #: A sub-agent's entry: the id of the tool entry it is drawn in (absent: top level).
    parent: NonEmpty | None = None


class NoticeEntry(_Model):
    kind: Literal["notice"]
    id: NonEmpty
    text: str
    #: A sub-agent's entry: the id of the tool entry it is drawn in (absent: top level).
    parent: NonEmpty | None = None


Entry = Annotated[
    UserEntry | AssistantEntry | ReasoningEntry | ToolEntry | ErrorEntry | NoticeEntry,
    Field(discriminator="kind"),
]

_ENTRY_MODELS: dict[str, type[_Model]] = {
    "user": UserEntry,
    "assistant": AssistantEntry,
    "reasoning": ReasoningEntry,
    "tool": ToolEntry,
    "error": ErrorEntry,
    "notice": NoticeEntry,
}
#: The fields a ``patch`` may change, per entry kind (everything but ``kind`` and ``id``).
ENTRY_FIELDS: dict[str, frozenset[str]] = {
    kind: frozenset(model.model_fields) - {"kind", "id"} for kind, model in _ENTRY_MODELS.items()
}
_ALL_FIELDS = frozenset().union(*ENTRY_FIELDS.values())
_FIELD_ADAPTERS: dict[str, TypeAdapter[Any]] = {}
for _model in _ENTRY_MODELS.values():
    for _name, _info in _model.model_fields.items():
        if _name not in ("kind", "id") and _name not in _FIELD_ADAPTERS:
            _parts: tuple[Any, ...] = (_info.annotation, *_info.metadata)
            _type: Any = Annotated[_parts] if _info.metadata else _info.annotation
            _FIELD_ADAPTERS[_name] = TypeAdapter(_type, config=ConfigDict(strict=True))


class TranscriptState(_Model):
    entries: list[Entry]
    status: Status
    seq: NonNegative


# ---------------------------------------------------------------- ops


class AddOp(_Model):
    op: Literal["add"]
    entry: Entry


class AppendOp(_Model):
    op: Literal["append"]
    id: NonEmpty
    field: AppendField
    text: str


class PatchOp(_Model):
    op: Literal["patch"]
    id: NonEmpty
    changes: dict[str, Any]

    @field_validator("changes")
    @classmethod
    def _known_fields(cls, changes: dict[str, Any]) -> dict[str, Any]:
        for key, value in changes.items():
            if key not in _ALL_FIELDS:
                raise ValueError(f"{key!r} is not a field a patch can change")
            _FIELD_ADAPTERS[key].validate_python(value)
        return changes


class StatusOp(_Model):
    op: Literal["status"]
    status: Status


class ResetOp(_Model):
    op: Literal["reset"]


Op = Annotated[AddOp | AppendOp | PatchOp | StatusOp | ResetOp, Field(discriminator="op")]


# ---------------------------------------------------------------- kernel to page


class SnapshotMsg(_Model):
    type: Literal["snapshot"]
    seq: NonNegative
    transcript: TranscriptState


class BatchMsg(_Model):
    type: Literal["batch"]
    seq: NonNegative
    ops: list[Op]


class ReplyMsg(_Model):
    type: Literal["reply"]
    request_id: NonEmpty
    ok: bool
    error: str | None


class StudioAgent(_Model):
    id: NonEmpty
    name: str
    description: str | None


class StudioSessionView(_Model):
    """An earlier stored Studio session the page offers to open."""

    id: NonEmpty
    title: str
    agent_id: str
    updated_at: str


class StudioMsg(_Model):
    type: Literal["studio"]
    agents: list[StudioAgent]
    selected: str
    quick_prompts: dict[str, list[str]]
    busy: bool
    #: Earlier stored sessions, newest first (absent or None: none).
    sessions: list[StudioSessionView] | None = None


# ---------------------------------------------------------------- evals (a report's widget)

EvalsStatus = Literal["pending", "running", "done", "stopped"]
EvalsCaseStatus = Literal["pending", "running", "success", "error", "cancelled"]
#: A finite number (JSON has no NaN or infinity).
Finite = Annotated[float, Field(allow_inf_nan=False)]
#: A score on the wire: a bool, a finite number, or null (failed or not scored).
ScoreValue = bool | int | Finite | None


class EvalsScoreView(_Model):
    """One metric's score of one case."""

    metric: str
    value: ScoreValue
    passed: bool | None
    error: str | None
    reason: str | None


class EvalsRowView(_Model):
    """One case's row (``index`` 0-based, in case order); text fields are previews."""

    index: NonNegative
    name: str
    input: str
    status: EvalsCaseStatus
    passed: bool | None
    output: str
    error: str | None
    duration_ms: NonNegative | None
    tokens: NonNegative | None
    run_id: str | None
    scores: list[EvalsScoreView]


class EvalsMetricView(_Model):
    name: str
    mean: int | Finite | None


class EvalsSummary(_Model):
    """The report's header: progress, pass rate and the mean of each metric."""

    title: str
    status: EvalsStatus
    total: NonNegative
    finished: NonNegative
    errors: NonNegative
    elapsed_ms: NonNegative
    eta_ms: NonNegative | None
    pass_rate: int | Finite | None
    metrics: list[EvalsMetricView]
    #: The case whose transcript the widget shows (index), or None.
    open: NonNegative | None


class EvalsState(_Model):
    summary: EvalsSummary
    rows: list[EvalsRowView]


class EvalsMsg(_Model):
    """The whole report (after ``sync``); the next ``evals_update`` is ``seq + 1``."""

    type: Literal["evals"]
    seq: NonNegative
    report: EvalsState


class EvalsUpdateMsg(_Model):
    """Numbered changes: the new summary and the rows that changed (at most one per ~50 ms)."""

    type: Literal["evals_update"]
    seq: NonNegative
    summary: EvalsSummary
    rows: list[EvalsRowView]


# ---------------------------------------------------------------- inspect (a run's trace)


class InspectToolView(_Model):
    """A tool the model was offered: its JSON schema as pretty-printed text."""

    name: str
    description: str
    parameters: str


class InspectMessageView(_Model):
    """One message of the request, as text (tool calls and results as JSON)."""

    role: str
    text: str


class InspectSubCallView(_Model):
    """A tool call of a sub-agent's model call (name, status, and the sub-agent it ran, if any)."""

    name: str
    status: str | None
    duration_ms: Milliseconds | None
    sub_agent: InspectSubAgentView | None = None


class InspectSubTurnView(_Model):
    """One model call of a sub-agent's run, in short."""

    index: NonNegative
    turn: NonNegative
    model: str | None
    duration_ms: Milliseconds | None
    error: str | None
    input_tokens: NonNegative
    output_tokens: NonNegative
    cached_tokens: NonNegative | None
    finish_reason: str | None
    response_text: str
    tool_calls: list[InspectSubCallView]


class InspectSubAgentView(_Model):
    """The run of the sub-agent a tool call ran (``agent.as_tool``): its model calls (the first
    ones, at most a few dozen; ``model_call_count`` says how many there were)."""

    agent_id: str
    agent_name: str | None
    run_id: str
    model_calls: list[InspectSubTurnView]
    model_call_count: NonNegative


class InspectToolCallView(_Model):
    """A tool call the model asked for on this turn, and what came of it."""

    id: str
    name: str
    status: str | None
    args: str
    result: str | None
    duration_ms: Milliseconds | None
    approval: str | None
    question: str | None
    #: When the tool raised: the exception's type and traceback (the model saw only the result).
    traceback: str | None = None
    #: When the tool is a sub-agent: the model calls of the sub-agent's run.
    sub_agent: InspectSubAgentView | None = None


class InspectTurnView(_Model):
    """One model call of a run's trace as the Inspect view shows it. Every text is bounded by
    the kernel (cut with a note, like the static copy) and shown as text by the page."""

    index: NonNegative
    turn: NonNegative
    model: str | None
    provider: str | None
    started_at: str | None
    first_token_ms: Milliseconds | None
    duration_ms: Milliseconds | None
    attempts: NonNegative
    error: str | None
    input_tokens: NonNegative
    output_tokens: NonNegative
    cached_tokens: NonNegative | None
    instructions: str | None
    tools: list[InspectToolView]
    settings: str
    #: The last messages of the request (at most a few hundred), and how many there were.
    messages: list[InspectMessageView]
    message_count: NonNegative
    response_text: str
    reasoning: str
    finish_reason: str | None
    response_tool_calls: str
    tool_calls: list[InspectToolCallView]


class InspectReplyMsg(_Model):
    """The answer to ``inspect``: model call ``turn.index`` of ``count``, or why not (``ok``
    false, ``turn`` None)."""

    type: Literal["inspect_reply"]
    request_id: NonEmpty
    ok: bool
    error: str | None
    count: NonNegative
    turn: InspectTurnView | None


KernelMessage = Annotated[
    SnapshotMsg | BatchMsg | ReplyMsg | StudioMsg | EvalsMsg | EvalsUpdateMsg | InspectReplyMsg,
    Field(discriminator="type"),
]


# ---------------------------------------------------------------- page to kernel


class SyncMsg(_Model):
    type: Literal["sync"]
    request_id: NonEmpty


class ApprovalDecisionMsg(_Model):
    type: Literal["approval_decision"]
    request_id: NonEmpty
    approval_id: NonEmpty
    approved: bool
    reason: str | None
    edited_args: dict[str, Any] | None
    always_allow: bool
    #: The edited arguments as the JSON text typed, read by the kernel (exactly: a whole number
    #: past 2**53 is not rounded as JavaScript's numbers round it); instead of ``edited_args``.
    edited_args_json: str | None = None

    def edited(self) -> dict[str, Any] | None:
        """The edited arguments, from whichever field carries them; ``ValueError`` saying what
        is wrong with a text that is not a JSON object, or with both fields given."""
        if self.edited_args_json is None:
            return self.edited_args
        if self.edited_args is not None:
            raise ValueError("Send the edited arguments once: edited_args or edited_args_json.")
        return json_object(self.edited_args_json, "The edited arguments")


class QuestionAnswersMsg(_Model):
    type: Literal["question_answers"]
    request_id: NonEmpty
    question_id: NonEmpty
    answers: list[AnswerView]


class QuestionDeclineMsg(_Model):
    """Decline a question that may be declined (``QuestionView.declinable``: one an MCP server
    asked); the server is told ``decline``."""

    type: Literal["question_decline"]
    request_id: NonEmpty
    question_id: NonEmpty


class StopMsg(_Model):
    type: Literal["stop"]
    request_id: NonEmpty
    reason: str | None


class SteerMsg(_Model):
    """Send ``text`` into the run in progress (``request.steer``): delivered after the current
    turn's tool results, or before the run would end. Refused when no run goes on, or for a
    blank text."""

    type: Literal["steer"]
    request_id: NonEmpty
    text: str


class StudioSendMsg(_Model):
    type: Literal["studio_send"]
    request_id: NonEmpty
    agent_id: NonEmpty
    text: str


class StudioSelectMsg(_Model):
    """Show the conversation with ``agent_id`` (each agent has its own): a ``snapshot`` of it
    and a ``studio`` naming it as ``selected`` follow."""

    type: Literal["studio_select"]
    request_id: NonEmpty
    agent_id: NonEmpty


class StudioNewSessionMsg(_Model):
    type: Literal["studio_new_session"]
    request_id: NonEmpty


class StudioOpenSessionMsg(_Model):
    type: Literal["studio_open_session"]
    request_id: NonEmpty
    session_id: NonEmpty


class EvalsOpenCaseMsg(_Model):
    """Show the transcript of case ``index`` of a report (it follows as a ``snapshot``)."""

    type: Literal["evals_open_case"]
    request_id: NonEmpty
    index: NonNegative


class InspectMsg(_Model):
    """Show model call ``index`` (0 for the first; None for the latest) of the run's trace: the
    kernel answers with ``inspect_reply``."""

    type: Literal["inspect"]
    request_id: NonEmpty
    index: NonNegative | None


InboundMessage = Annotated[
    SyncMsg
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
    | InspectMsg,
    Field(discriminator="type"),
]

_INBOUND: TypeAdapter[Any] = TypeAdapter(InboundMessage)
_OUTBOUND: TypeAdapter[Any] = TypeAdapter(KernelMessage)
_INBOUND_TYPES = frozenset(
    (
        "sync",
        "approval_decision",
        "question_answers",
        "question_decline",
        "stop",
        "steer",
        "studio_send",
        "studio_select",
        "studio_new_session",
        "studio_open_session",
        "evals_open_case",
        "inspect",
    )
)
_OUTBOUND_TYPES = frozenset(
    ("snapshot", "batch", "reply", "studio", "evals", "evals_update", "inspect_reply")
)


def _request_id(raw: Any) -> str | None:
    if isinstance(raw, dict):
        value = raw.get("request_id")
        if isinstance(value, str) and value:
            return value
    return None


def _parse(adapter: TypeAdapter[Any], types: frozenset[str], raw: Any) -> Any:
    request_id = _request_id(raw)
    if not isinstance(raw, dict):
        raise ProtocolError(f"A message must be a JSON object, not {type(raw).__name__}.")
    kind = raw.get("type")
    if not isinstance(kind, str) or kind not in types:
        raise ProtocolError(f"Unknown message type {quoted(kind)}.", request_id)
    try:
        return adapter.validate_python(raw)
    except ValidationError as error:
        raise ProtocolError(
            f"Malformed {kind} message: {describe_validation_error(error, 'message', most=5)}",
            request_id,
        ) from None


def parse_inbound(raw: Any) -> Any:
    """Validate a page-to-kernel message; returns its model or raises :class:`ProtocolError`.
    A message holding text that is not valid Unicode (a lone surrogate) is refused: no run
    store could keep its reason, arguments or answers."""
    message = _parse(_INBOUND, _INBOUND_TYPES, raw)
    bad = invalid_text(raw)
    if bad is not None:
        raise ProtocolError(f"Malformed {raw['type']} message: {bad}", _request_id(raw))
    return message


def parse_outbound(raw: Any) -> Any:
    """Validate a kernel-to-page message (used by the tests on everything the kernel sends)."""
    return _parse(_OUTBOUND, _OUTBOUND_TYPES, raw)


def parse_message(raw: Any) -> Any:
    """Validate a message of either direction."""
    kind = raw.get("type") if isinstance(raw, dict) else None
    if kind in _OUTBOUND_TYPES:
        return parse_outbound(raw)
    return parse_inbound(raw)


# ---------------------------------------------------------------- outbound builders


def snapshot_message(transcript: dict[str, Any]) -> dict[str, Any]:
    return {"type": "snapshot", "seq": transcript["seq"], "transcript": transcript}


def batch_message(seq: int, ops: list[dict[str, Any]]) -> dict[str, Any]:
    return {"type": "batch", "seq": seq, "ops": ops}


def reply_message(request_id: str | None, error: str | None = None) -> dict[str, Any]:
    return {
        "type": "reply",
        "request_id": request_id or NO_REQUEST_ID,
        "ok": error is None,
        "error": error,
    }


def inspect_reply_message(
    request_id: str | None,
    *,
    count: int,
    turn: dict[str, Any] | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    return {
        "type": "inspect_reply",
        "request_id": request_id or NO_REQUEST_ID,
        "ok": error is None,
        "error": error,
        "count": count,
        "turn": turn if error is None else None,
    }
