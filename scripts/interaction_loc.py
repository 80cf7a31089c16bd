"""Count the lines of code that handle approvals and questions (issue 18's measure).

Usage (from the repository's root)::

    python scripts/interaction_loc.py              # the working tree
    python scripts/interaction_loc.py --rev main   # any commit, read with ``git show``
    python scripts/interaction_loc.py --rev ba850d5 --detail

What counts: for each declared part below, the non-blank lines that are not comments and not
docstrings (Python: module, class and function docstrings found with ``ast``; TypeScript: ``//``
lines and ``/* ... */`` blocks). A part is a whole file, or named pieces of a file:

- Python: a top-level function, class or assigned name (``name``), a method (``Class.name``),
  or the lines of one of them from a marker text to another (``name[from..to]``, the ``to``
  line excluded; no ``to``: to the piece's end); or the whole file but some names of it
  (pieces that all begin with ``-``: ``-name``), for helpers a file shares with other code;
- TypeScript: a top-level declaration (``function``, ``const``, ``class``, ``interface``,
  ``type``), through the end of its statement (a scan of brackets), or a marker range
  (``[from..to]``) of the file.

The declared list holds the names of both the code before the redesign and after it: a name
a commit does not have counts 0 and is listed under "absent" (so a name that moved shows up).
Also printed: the places that hold interaction state (a hand-kept list: see ``STATE_HOLDERS``).
"""

from __future__ import annotations

import argparse
import ast
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PKG = "anvia_notebook/"

#: (part, file, pieces): ``None`` pieces means the whole file.
PYTHON: list[tuple[str, str, list[str] | None]] = [
    # Not counted, in every commit alike: what other code shares (the clock, the path label
    # of a sub-agent, pydantic errors in words, the fields that name a tool call) and the
    # general JSON Schema checker that MCP tool calls use too.
    ("records", "records.py", ["-utc_now", "-path_label"]),
    ("decisions", "decisions.py", None),
    ("interactions", "interactions.py", None),
    ("approvals", "approvals.py", None),
    ("questions", "questions.py", None),
    ("question_types", "question_types.py", ["-describe_validation_error"]),
    ("human", "human.py", None),
    ("widget human input", "notebook/_human_input.py", None),
    (
        "executor",
        "_tool_exec.py",
        [
            "TOOL_CALL_QUESTIONS",
            "ToolExecutor._intercepted",
            "ToolExecutor._approved_call",
            "ToolExecutor._earlier",
            "ToolExecutor._human_timeout",
            "ToolExecutor._approve",
            "ToolExecutor.approve",
            "ToolExecutor.refuse_edit",
            "ToolExecutor._approval_outcome",
            "ToolExecutor._refused_edit",
            "ToolExecutor._handler_decision",
            "ToolExecutor._human_decision",
            "ToolExecutor._ask",
            "ToolExecutor._put_questions",
            "ToolExecutor._question_outcome",
            "ToolExecutor._human_answers",
            "ToolExecutor._opening",
            "ToolExecutor._open",
            "ToolExecutor._wait",
            "ToolExecutor._keep",
            "ToolExecutor._finish",
            "ToolExecutor._gave_up",
            "ToolExecutor._cut_short",
            "ToolExecutor._unaskable",
            "ToolExecutor._interact",
            "ToolExecutor._decider",
            "ToolExecutor._ask_during_call",
            "_ENDED",
            "_UNAVAILABLE",
            "_request_event",
            "_result_event",
            "result_event",
            "_timed_out_text",
            "_asked",
            "_jsonable",
            "latest_record",
            "_ended_status",
            "_EVENTS",
            "INTERACTION_EVENTS",
            "interaction_event",
            "ApprovalOutcome",
            "_shown_args",
            "_parsed",
        ],
    ),
    (
        "trace",
        "_tracing.py",
        ["TraceRecorder.interaction", "TraceRecorder.approval", "TraceRecorder.question"],
    ),
    ("spans", "_otel.py", ["RunSpans.interaction", "RunSpans.approval", "RunSpans.question"]),
    ("run end", "_loop.py", ["_close_interactions"]),
    ("run", "run.py", ["AgentRun._waits_for_person", "AgentRun.status", "AgentRun.cancelled_as"]),
    (
        "run state",
        "run_state.py",
        [
            "RunState.pending_approvals",
            "RunState.pending_questions",
            "RunState.pending",
            "RunState.record",
            "RunState.hold",
        ],
    ),
    ("edits sent to the run", "store/_confirm.py", None),
    (
        "typed output fix",
        "_typed_output.py",
        [
            "TypedOutput._repair",
            "TypedOutput._decided_record",
            "TypedOutput._approved_fix",
            "TypedOutput._hook_approval",
        ],
    ),
    (
        "store",
        "store/_store.py",
        [
            "RunStore.interactions",
            "RunStore._records",
            "RunStore.pending",
            "RunStore.approve",
            "RunStore.reject",
            "RunStore.answer",
            "RunStore.decline",
            "RunStore._decide",
            "RunStore._too_late",
            "RunStore.edit_waits",
            "RunStore.claim",
            "RunStore._write_decided",
            "RunStore.record",
            "RunStore.decision",
            "RunStore.open_interaction",
            "RunStore.save_interaction",
            "RunStore._close_left_open",
            "RunStore.watch",
            "RunStore.unwatch",
            "RunStore._deliver",
            "RunStore.get[for record in self.interactions(run_id)..return state]",
            "_ENDED_UNDECIDED",
            "_hold",
            "_item_id",
            "_id_of",
            "_row_record",
            "_legacy_decision",
            "_columns",
        ],
    ),
    (
        "command line",
        "__main__.py",
        [
            "_parser[decide: dict..steer = commands]",
            "_parser[approve = commands..steer = commands]",
            "_print_run[for record in pending..]",
            "_refused_edits",
            "_OWN",
            "_pick",
            "_example",
            "_refuse_placeholders",
            "_question_call",
            "_json_arg",
            "_decide",
            "DECISIONS",
            'main[elif args.command == "approve"..elif args.command == "steer"]',
            'main[elif args.command in DECISIONS..elif args.command == "steer"]',
            "_run_command[elif args.command in DECISIONS..]",
        ],
    ),
    (
        "session handlers",
        "notebook/_session.py",
        [
            "INTERACTION_EVENTS",
            "TranscriptSession._interactions",
            "TranscriptSession._on_approval_decision",
            "TranscriptSession._always_allow",
            "TranscriptSession._approve_pending",
            "TranscriptSession._on_question_answers",
            "TranscriptSession._on_question_decline",
            "TranscriptSession._on_decision",
            "TranscriptSession._on_question",
            "_asking_run",
            "TranscriptSession._dispatch[except DecisionRefusedError..except Exception]",
        ],
    ),
    (
        "transcript",
        "notebook/_transcript.py",
        [
            "_AWAITING_PERSON",
            "_WAITING",
            "NO_ANSWERS",
            "_OUTCOMES",
            "_LEFT_OPEN",
            "_iso",
            "_jsonable",
            "interaction_view",
            "_Entry.__init__[self.records..]",
            "Transcript._activity",
            "Transcript._waits",
            "Transcript._on_interaction",
            "Transcript._finish_unfinished[approval = entry.get..self._patch(entry, **changes)]",
            "Transcript._finish_unfinished[for kind, record in..self._patch(entry, **changes)]",
        ],
    ),
    (
        "handle",
        "notebook/_handle.py",
        [
            "RunHandle.pending",
            "RunHandle.approve",
            "RunHandle.reject",
            "RunHandle.answer",
            "RunHandle.decline",
        ],
    ),
    (
        "wire models",
        "notebook/_protocol.py",
        [
            "ApprovalView",
            "ChoiceView",
            "QuestionItemView",
            "AnswerView",
            "AnsweredView",
            "QuestionView",
            "_RecordView",
            "IsoTime",
            "_iso",
            "_common",
            "interaction_view",
            "ApprovalDecisionMsg",
            "QuestionAnswersMsg",
            "QuestionDeclineMsg",
        ],
    ),
]

TYPESCRIPT: list[tuple[str, str, list[str] | None]] = [
    ("interaction view", "js/src/views/interaction.ts", None),
    ("approval view", "js/src/views/approval.ts", None),
    ("question view", "js/src/views/question.ts", None),
    (
        "tool view",
        "js/src/views/tool.ts",
        [
            "editedArgs",
            "UNDER_WAY",
            "underWay",
            "PATH_SEPARATOR",
            "toolLabel",
            "[const next = interactionsOf(e)..wasUnderWay = going;]",
        ],
    ),
    (
        "protocol",
        "js/src/protocol.ts",
        [
            "APPROVAL_STATUSES",
            "ApprovalStatus",
            "DECIDERS",
            "Decider",
            "DECIDED_VIA",
            "DecidedVia",
            "QUESTION_STATUSES",
            "QuestionStatus",
            "approvalCheck",
            "answerCheck",
            "questionCheck",
            "[approval_decision: shape..stop: shape]",
        ],
    ),
]

#: Where interaction state is held, written by hand from a read of the code (a script cannot
#: tell a copy from a reference); which list applies is told by the marker: a tree whose
#: ``interactions.py`` keeps records through the run state (``self.state.hold(``) has the
#: second list. "copy" means a second, separately updated copy of a record or of its status.
STATE_HOLDERS: dict[str, list[str]] = {
    "records kept by Interactions and the run state (ba850d5 and before)": [
        "kernel, in memory: RunState.approvals / RunState.questions (the record)",
        "kernel, in memory: OpenInteraction.record in Interactions._items (copy: replaced on "
        "each decision, written back into the run state later by the executor's _keep; the "
        "run end wrote it back per kind in _loop)",
        "kernel, durable: the run store's interactions row (status column and record)",
        "kernel, views: the transcript's tool entries (the wire view of each record and the "
        "entry status approval_required / input_required, from events)",
        "kernel, trace: ToolCallTrace.approval / .question (the record as of the last event)",
        "page: TranscriptStore.entries (js/src/store.ts)",
        "page: each interaction panel's JSON copy of the last view shown (views/interaction.ts)",
    ],
    "records kept by the run state only (this redesign)": [
        "kernel, in memory: RunState.approvals / RunState.questions, the one holder: "
        "Interactions writes every decision there (RunState.hold) and keeps only what waits "
        "by id (future, timer, input model); OpenInteraction.record reads the run state",
        "kernel, durable: the run store's interactions row (status column and record, written "
        "whole in the claim's conditional update)",
        "kernel, views: the transcript's tool entries (wire views made from the record by one "
        "serialiser, ApprovalView/QuestionView.from_record, from events; the page's snapshot "
        "source; each entry keeps a reference to the record it shows, to close it if a log ends "
        "with it open)",
        "kernel, trace: ToolCallTrace.approval / .question (a reference to the record of the "
        "last event, for Inspect and the stored trace)",
        "page: TranscriptStore.entries (js/src/store.ts), the one copy: the panel keeps a "
        "reference to the store's view, not a copy",
    ],
    "records kept by the run state only; the transcript and the trace are views of them": [
        "kernel, in memory: RunState.approvals / RunState.questions, the one holder: "
        "Interactions writes every decision there (RunState.hold) and keeps only what waits "
        "by id (future, timer, input model); OpenInteraction.record, RunHandle.pending and the "
        "widget's decisions read it there",
        "kernel, durable: the run store's interactions row (status column and record, written "
        "whole in the claim's conditional update)",
        "page: TranscriptStore.entries (js/src/store.ts), the one copy: the panel keeps a "
        "reference to the store's view, not a copy",
    ],
}
#: What is made from the records and holds no state of its own (nothing reads it to decide,
#: nothing writes it back): logs of the events, each keeping the record an event carried (an
#: immutable value, replaced by the next event's), and the views made from them. Listed for
#: the tree whose holders are the third list above.
DERIVED_VIEWS: list[str] = [
    "kernel, views: the transcript's tool entries: the wire view of each event's record (one "
    "serialiser, ApprovalView/QuestionView.from_record), the page's snapshot source and the "
    "status line's waiting state; an entry keeps the record its last event carried, only to "
    "close it if a log ends with it open (a stored log replayed without a run)",
    "kernel, log: ToolCallTrace.approval / .question: the record its last event carried, "
    "for Inspect and the stored trace rows (a trace loaded from the store has it from there)",
]
_NEW_HOLDERS_MARK = "self.state.hold("
#: A transcript that takes each interaction's view from its event's record by kind (and no
#: longer writes a record back): its tool entries and the trace are the views listed apart.
_VIEWS_MARK = "kind, view = record.kind, interaction_view(record)"


@dataclass
class Count:
    lines: int = 0
    absent: list[str] = field(default_factory=list)


def read(path: str, rev: str | None) -> str | None:
    if rev is None:
        file = ROOT / path
        return file.read_text(encoding="utf-8") if file.exists() else None
    done = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:{path}"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout if done.returncode == 0 else None


# -- Python --------------------------------------------------------------------------------------


def _docstring_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                doc = body[0]
                lines.update(range(doc.lineno, (doc.end_lineno or doc.lineno) + 1))
        # A bare string under an assignment (an attribute's docstring) is a docstring too.
        if isinstance(node, (ast.Module, ast.ClassDef)):
            for stmt in node.body[1:]:
                if (
                    isinstance(stmt, ast.Expr)
                    and isinstance(stmt.value, ast.Constant)
                    and isinstance(stmt.value.value, str)
                ):
                    lines.update(range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1))
    return lines


def _code_lines(source_lines: list[str], span: range, skip: set[int]) -> int:
    count = 0
    for number in span:
        text = source_lines[number - 1].strip()
        if text and not text.startswith("#") and number not in skip:
            count += 1
    return count


def _named(tree: ast.Module) -> dict[str, ast.stmt]:
    found: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            found[node.name] = node
            if isinstance(node, ast.ClassDef):
                for inner in node.body:
                    if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        # A property and its setter share a name: the first one and the rest.
                        key = f"{node.name}.{inner.name}"
                        while key in found:
                            key += "'"
                        found[key] = inner
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node
    return found


_PIECE = re.compile(r"^(?P<name>[^\[]*)(\[(?P<start>.*?)\.\.(?P<end>.*)\])?$")


def _span(source_lines: list[str], first: int, last: int, start: str, end: str) -> range | None:
    """The lines of ``first..last`` from the one holding ``start`` to before ``end``."""
    begin = next((n for n in range(first, last + 1) if start in source_lines[n - 1]), None)
    if begin is None:
        return None
    stop = last + 1
    if end:
        stop = next((n for n in range(begin + 1, last + 1) if end in source_lines[n - 1]), stop)
    return range(begin, stop)


def count_python(source: str, pieces: list[str] | None) -> Count:
    tree = ast.parse(source)
    lines = source.splitlines()
    skip = _docstring_lines(tree)
    named = _named(tree)
    if pieces is None or all(piece.startswith("-") for piece in pieces):
        for piece in pieces or []:  # the names left out of the whole file
            node = named.get(piece[1:])
            if node is not None:
                first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
                skip.update(range(first, (node.end_lineno or node.lineno) + 1))
        return Count(_code_lines(lines, range(1, len(lines) + 1), skip))
    result = Count()
    for piece in pieces:
        match = _PIECE.match(piece)
        assert match is not None
        name, start, end = match["name"], match["start"], match["end"]
        spans: list[range] = []
        for key in [name] + [k for k in named if k.startswith(name + "'")]:
            node = named.get(key)
            if node is None:
                continue
            decorators = getattr(node, "decorator_list", [])
            first = min([node.lineno, *(d.lineno for d in decorators)])
            last = node.end_lineno or node.lineno
            span = (
                range(first, last + 1) if start is None else _span(lines, first, last, start, end)
            )
            if span is not None:
                spans.append(span)
        if not spans:
            result.absent.append(piece)
            continue
        for span in spans:
            result.lines += _code_lines(lines, span, skip)
    return result


# -- TypeScript ----------------------------------------------------------------------------------


def _ts_code(source: str) -> list[str]:
    """The file's lines with comments blanked (strings are left alone: a ``//`` inside a string
    on a line that starts with code keeps the line counted, which is all that matters here)."""
    out: list[str] = []
    in_block = False
    for line in source.splitlines():
        text = line
        if in_block:
            end = text.find("*/")
            if end < 0:
                out.append("")
                continue
            text = text[end + 2 :]
            in_block = False
        stripped = text.strip()
        while stripped.startswith("/*"):
            end = stripped.find("*/", 2)
            if end < 0:
                in_block = True
                stripped = ""
                break
            stripped = stripped[end + 2 :].strip()
        if stripped.startswith("//"):
            stripped = ""
        out.append(stripped)
    return out


_DECL = re.compile(
    r"^(export\s+)?(default\s+)?(async\s+)?(function\*?|const|let|class|interface|type)\s+(?P<name>\w+)"
)


def _ts_statement_end(code: list[str], begin: int) -> int:
    """The index of the last line of the statement starting at ``begin``: the first line,
    from there, where the brackets are balanced and that ends with ``;`` or ``}``."""
    depth = 0
    for index in range(begin, len(code)):
        text = re.sub(r"(\"(\\.|[^\"\\])*\"|'(\\.|[^'\\])*'|`(\\.|[^`\\])*`)", '""', code[index])
        depth += sum(text.count(c) for c in "{([") - sum(text.count(c) for c in "})]")
        if depth <= 0 and text.endswith((";", "}")):
            return index
    return len(code) - 1


def count_typescript(source: str, pieces: list[str] | None) -> Count:
    code = _ts_code(source)
    if pieces is None:
        return Count(sum(1 for line in code if line))
    result = Count()
    for piece in pieces:
        match = _PIECE.match(piece)
        assert match is not None
        name, start, end = match["name"], match["start"], match["end"]
        if not name:
            raw = source.splitlines()
            span = _span(raw, 1, len(raw), start, end)
            if span is None:
                result.absent.append(piece)
                continue
            result.lines += sum(1 for n in span if code[n - 1])
            continue
        begin = next(
            (i for i, line in enumerate(code) if (m := _DECL.match(line)) and m["name"] == name),
            None,
        )
        if begin is None:
            result.absent.append(piece)
            continue
        last = _ts_statement_end(code, begin)
        result.lines += sum(1 for line in code[begin : last + 1] if line)
    return result


# -- report --------------------------------------------------------------------------------------


def measure(rev: str | None) -> dict[str, list[tuple[str, str, Count]]]:
    out: dict[str, list[tuple[str, str, Count]]] = {"Python": [], "TypeScript": []}
    for language, parts, prefix, counter in (
        ("Python", PYTHON, PKG, count_python),
        ("TypeScript", TYPESCRIPT, "", count_typescript),
    ):
        for part, path, pieces in parts:
            source = read(prefix + path, rev)
            if source is None:
                out[language].append((part, prefix + path, Count(0, ["(file absent)"])))
                continue
            out[language].append((part, prefix + path, counter(source, pieces)))
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rev", help="a commit, branch or tag (default: the working tree)")
    parser.add_argument("--detail", action="store_true", help="list absent pieces per part")
    args = parser.parse_args(argv)
    where = args.rev or "working tree"
    print(
        f"Lines that handle approvals and questions ({where}; "
        "non-blank, no comments, no docstrings)"
    )
    totals: dict[str, int] = {}
    for language, rows in measure(args.rev).items():
        print(f"\n{language}")
        for part, path, count in rows:
            print(f"  {part:<22} {count.lines:>5}  {path}")
            if args.detail and count.absent:
                print(f"  {'':<22} {'':>5}  absent: {', '.join(count.absent)}")
        totals[language] = sum(count.lines for _, _, count in rows)
        print(f"  {'total':<22} {totals[language]:>5}")
    print(f"\nAll: {sum(totals.values())}")
    interactions = read(PKG + "interactions.py", args.rev) or ""
    transcript = read(PKG + "notebook/_transcript.py", args.rev) or ""
    views = _NEW_HOLDERS_MARK in interactions and _VIEWS_MARK in transcript
    title, holders = list(STATE_HOLDERS.items())[(_NEW_HOLDERS_MARK in interactions) + views]
    print(f"\nPlaces that hold interaction state ({title}): {len(holders)}")
    for holder in holders:
        print(f"  - {holder}")
    if views:
        print(f"\nMade from the records, holding no state of their own: {len(DERIVED_VIEWS)}")
        for view in DERIVED_VIEWS:
            print(f"  - {view}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
