"""The command line: list stored runs and decide their pending approvals and questions.

    python -m anvia_notebook runs [--status S] [--agent A] [--limit N] [--json]
    python -m anvia_notebook show RUN_ID [--json]
    python -m anvia_notebook approve RUN_ID APPROVAL_ID [--reason TEXT] [--args JSON]
    python -m anvia_notebook reject RUN_ID APPROVAL_ID [--reason TEXT]
    python -m anvia_notebook answer RUN_ID QUESTION_ID \
        --json '[{"questionId": ..., "answer": ..., "choice": ...}]'  # or "custom": true
    python -m anvia_notebook decline RUN_ID QUESTION_ID   # a question an MCP server asked
    python -m anvia_notebook steer RUN_ID TEXT   # a message to a running or waiting run

``--store PATH`` (or ``ANVIA_NOTEBOOK_STORE``), before or after the command, picks the store; the
default is ``.anvia/runs.sqlite`` in the current folder. A notebook keeps its runs in
``.anvia/runs.sqlite`` next to the notebook, so ``--store notebooks/.anvia/runs.sqlite`` lists the
runs of the notebooks in ``notebooks/``. A refused decision, or a message to a run that has
ended, exits with status 1. ``approve --args`` is checked by the run's process (the tool's own
rules too) before it is recorded; a refused edit prints the run's words. When no process runs the
run, the edit waits for it: it is checked, and the approval recorded, when the run is resumed
(``show`` lists it).

``python`` above is the Python that has this package (after the quickstart, ``.venv/bin/python``,
or ``python`` once ``.venv`` is activated); the commands the command line suggests name this
interpreter's full path, so they work as written in any terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import json
import os
import re
import shlex
import sys
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ._util import cli_command, shown_url, url_for_commands
from .errors import AnviaError, DecisionRefusedError, RunNotFoundError
from .store import STORE_ENV, default_location
from .store._location import is_postgres_address, location_problem

if TYPE_CHECKING:
    from .question_types import Question
    from .records import ApprovalRecord, QuestionRecord
    from .run_state import RunState
    from .store import RunStore

__all__ = ["main"]


_command = cli_command


#: The commands that decide an interaction: the id they take, their help, what they print.
DECISIONS = {
    "approve": ("approval_id", "approve a pending approval", "Approved"),
    "reject": ("approval_id", "reject a pending approval", "Rejected"),
    "answer": ("question_id", "answer a pending question", "Answered"),
    "decline": ("question_id", "decline a pending question an MCP server asked", "Declined"),
}


def _parser() -> argparse.ArgumentParser:
    store_help = f"the run store (default: ${STORE_ENV}, else .anvia/runs.sqlite here)"
    parser = argparse.ArgumentParser(
        prog=_command(),
        description="List stored agent runs and decide their pending approvals and questions.",
    )
    parser.add_argument("--store", help=store_help)
    # --store is also accepted after the command; there it does not reset the one given before.
    after = argparse.ArgumentParser(add_help=False)
    after.add_argument("--store", default=argparse.SUPPRESS, help=store_help)
    commands = parser.add_subparsers(dest="command", required=True)
    run_help = "the run's id (the runs command lists them)"
    runs = commands.add_parser(
        "runs",
        parents=[after],
        help="list runs, newest first",
        description="List the stored runs, newest first: id, agent, status, pending, prompt.",
    )
    runs.add_argument("--status", choices=RUN_STATUSES, help="only the runs in this state")
    runs.add_argument("--agent", help="only the runs of the agent with this id")
    runs.add_argument("--limit", type=_count, default=50, help="at most this many (default 50)")
    runs.add_argument("--json", action="store_true", help="print JSON")
    show = commands.add_parser(
        "show",
        parents=[after],
        help="show a run and its pending interactions",
        description="Show a run: its status, prompt, and each pending approval or question "
        "with the command that decides it.",
    )
    show.add_argument("run_id", help=run_help)
    show.add_argument("--json", action="store_true", help="print JSON")
    decide: dict[str, argparse.ArgumentParser] = {}
    for command, (item_id, what, _) in DECISIONS.items():
        described = f"{what[0].upper()}{what[1:]} (show RUN_ID lists them, with their ids)."
        decide[command] = commands.add_parser(
            command, parents=[after], help=what, description=described
        )
        decide[command].add_argument("run_id", help=run_help)
        kind = item_id.split("_")[0]
        decide[command].add_argument(item_id, help=f"the {kind}'s id (show RUN_ID lists it)")
    decide["approve"].add_argument("--reason", help="why it was approved (kept with it)")
    edits = "edited arguments, a JSON object (checked by the run's process while it is alive)"
    decide["approve"].add_argument("--args", help=edits)
    decide["reject"].add_argument("--reason", help="why: the agent is told it")
    decide["answer"].add_argument(
        "--json",
        required=True,
        dest="answers",
        help='the answers, a JSON list with one object per question: {"questionId": ..., '
        '"answer": ...}, plus "choice" (the picked option\'s value, given as the answer too) or '
        '"custom": true (an answer of your own)',
    )
    steer = commands.add_parser(
        "steer",
        parents=[after],
        help="send a message to a running or waiting run (it reads it after its current step)",
    )
    steer.add_argument("run_id")
    steer.add_argument("text", help="the message, as the person's own words")
    return parser


def _count(text: str) -> int:
    """``--limit``: a whole number, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of runs (0 or more)")
    return value


#: What ``runs --status`` takes (as ``RunStore.runs``; written here so the command line does not
#: load pydantic): a stored run's states, and ``interrupted`` (its process is gone).
RUN_STATUSES = ("pending", "running", "waiting", "interrupted", "success", "error", "cancelled")

_WHERE_NOTEBOOKS_STORE = (
    "A notebook keeps its runs in .anvia/runs.sqlite in the notebook's folder: pass that file "
    "with --store (from a project's top folder, e.g. --store notebooks/.anvia/runs.sqlite)."
)


#: Characters a terminal acts on instead of showing (escape sequences, carriage return, bell,
#: the C1 controls, and the bidirectional overrides that make text read backwards); a line's end
#: and a tab are kept.
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
#: Halves of a character that came alone (from JSON text): no terminal can be sent them.
_SURROGATES = re.compile("[\ud800-\udfff]")


def _visible(text: str) -> str:
    """``text`` with its control characters as visible escapes (``\\x1b``): a model's, a tool's
    or a prompt's text must not clear the screen or rewrite what a line says."""
    return _CONTROLS.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


def _readable(data: Any) -> str:
    """``data`` as JSON with its text as written (a payee in Cyrillic reads as such, not as
    ``\\u`` escapes); what cannot be shown on a terminal is made visible by :func:`_say`."""
    text = json.dumps(data, ensure_ascii=False)
    return _SURROGATES.sub(lambda m: f"\\u{ord(m.group()):04x}", text)  # (cannot be printed)


def _say(text: str = "") -> None:
    """Print a line of ``runs`` or ``show`` as text (their ``--json`` escapes by itself)."""
    print(_visible(text))


def _say_edits(store: RunStore, record: Any) -> None:
    """The edited arguments sent for approval ``record`` that the run has not recorded."""
    for status, edited, words in store.edit_requests(record.id):
        said = "waits for the run to check it" if status == "queued" else words
        _say(f"  edited arguments {_readable(edited)}: {said}")


def _print_runs(store: RunStore, args: argparse.Namespace) -> None:
    found = store.runs(status=args.status, agent_id=args.agent, limit=args.limit)
    if args.json:
        print(json.dumps([r.model_dump(mode="json") for r in found], indent=2))
        return
    if not found and args.limit == 0:
        _say("No runs shown: --limit 0 asks for none.")
        return
    if not found and (args.status or args.agent is not None) and store.runs(limit=1):
        # The store has runs, none of them these: no advice to look for another store.
        which = (f" with status {args.status}" if args.status else "") + (
            f" of agent {args.agent!r}" if args.agent is not None else ""
        )
        _say(f"No stored runs{which} in {store.location}.")
        return
    if not found:
        # The advice names SQLite files: a PostgreSQL store is one the user chose on purpose.
        advice = "" if "://" in store.location else f"\n{_WHERE_NOTEBOOKS_STORE}"
        _say(f"No stored runs in {store.location}.{advice}")
        return
    times = f"{'STARTED':<16} {'UPDATED':<16}"
    _say(f"{'RUN':<26} {'AGENT':<20} {'STATUS':<12} {times} {'PENDING':>7}  PROMPT")
    for run in found:
        prompt = " ".join(run.prompt.split())[:60]
        times = f"{_local(run.created_at)} {_local(run.updated_at)}"
        _say(
            f"{run.run_id:<26} {run.agent_id:<20} {run.status:<12} {times} {run.pending:>7}  "
            f"{prompt}"
        )


def _say_decided(store: RunStore, state: RunState) -> None:
    """The decisions an interrupted run holds for calls that have not started (made before its
    process ended, or since then from the command line, a handle or the store): what its
    resume does with each (else a decision made from the terminal left no trace in ``show``).
    Not the decision of an earlier turn's call that ended, whose id the model gave a call of
    the last turn again: the resume does not use it (that call is asked afresh)."""
    from .events import ToolResultEvent

    last = state.messages[-1] if state.messages else None
    if last is None or last.role != "assistant":
        return
    waiting = {call.id for call in last.tool_calls} - set(state.calls)
    records: list[Any] = [*state.approvals.values(), *state.questions.values()]
    records = [r for r in records if r.tool_call_id in waiting and r.status in _DECIDED_NOTES]
    if not records:
        return
    events = store.events(state.run_id)
    ended = {e.internal_call_id for e in events if isinstance(e, ToolResultEvent)}
    for record in records:
        if record.internal_call_id in ended:
            continue
        via = f" (from the {record.decided_via})" if record.decided_via else ""
        what = f"{record.tool_name} {_readable(record.args)}" if record.kind == "approval" else ""
        _say(
            f"\n{record.kind.capitalize()} {record.id} {what}".rstrip()
            + f" was {record.status.replace('_', ' ')}{via}: {_DECIDED_NOTES[record.status]}"
        )


#: What the resume of an interrupted run does with a decision its call has not used yet.
_DECIDED_NOTES = {
    "approved": "the call runs when the run resumes.",
    "rejected": "the model is told so when the run resumes; the call does not run.",
    "answered": "the answers go to the model when the run resumes.",
}


def _say_resume(store: RunStore, state: RunState, location: str | None) -> None:
    """How an interrupted run goes on: the code that resumes it (a sub-agent's run, with its
    top-level run), and with which agent. ``location``: the store as named on the command line
    (None: the default one, which a notebook in this folder opens too)."""
    top = store.top_run(state.run_id)
    run_id, agent_id = top if top is not None else (state.run_id, state.agent_id)
    where = f", store={location!r}" if location else ""
    inside = f" (the run of a sub-agent inside run {run_id})" if run_id != state.run_id else ""
    _say(
        f"\nIts process is gone{inside}: it goes on when resumed with agent {agent_id!r} "
        f"(its tools and model): agent.resume({run_id!r}{where})"
    )


def _local(moment: datetime) -> str:
    """A time in this machine's time zone, to the minute (as a terminal user reads it)."""
    return moment.astimezone().strftime("%Y-%m-%d %H:%M")


def _print_run(store: RunStore, args: argparse.Namespace) -> None:
    state = store.get(args.run_id)
    status = store.status(args.run_id)
    pending = store.pending(args.run_id)
    refused = _refused_edits(store, args.run_id)
    ended = status in ("success", "error", "cancelled")
    # Every message the run has not read: those it took (held in its state: a run that was
    # interrupted reads them when resumed), then those sent while no process took them (a row
    # its run holds already, marked taken by nobody since, is listed once)
    taken = set(state.steered_ids)
    held = {item.id for item in state.steering}
    queued = [item for item in store.queued_steering(args.run_id) if item.id not in taken]
    queued = [*state.steering, *queued]
    if args.json:
        data = state.model_dump(mode="json")
        data["status"] = status
        data["pending"] = [p.model_dump(mode="json") for p in pending]
        for shown, record in zip(data["pending"], pending, strict=True):
            if record.kind == "approval":
                shown["edits"] = [
                    {"status": status, "args": edited, "refused": words}
                    for status, edited, words in store.edit_requests(record.id)
                ]
        data["refused_edits"] = [
            {
                "approval_id": record.id,
                "tool_name": record.tool_name,
                "args": edited,
                "refused": why,
            }
            for record, edited, why in refused
        ]
        # (messages a run that ended never read are "unread_steering": it cannot read them)
        key = "unread_steering" if ended else "queued_steering"
        data[key] = [{"id": item.id, "text": item.message.content or ""} for item in queued]
        print(json.dumps(data, indent=2))
        return
    _say(f"Run {state.run_id} of agent {state.agent_id}: {status}")
    if status == "error" and state.error:
        _say(f"  error: {' '.join(state.error.split())[:2000]}")
    # (a password in a PostgreSQL address is not printed back: given as PGPASSWORD)
    written, secret = (None, False)
    if is_postgres_address(args.store):
        written, secret = url_for_commands(args.store)
    command = _command(written or args.store)
    questions = {q.tool_call_id: q for q in state.questions.values() if q.tool_call_id}
    approvals = sorted(state.approvals.values(), key=lambda a: a.requested_at)
    for message in state.messages:
        text = " ".join((message.content or "").split())
        calls = ", ".join(_call_line(c, questions, approvals) for c in message.tool_calls)
        if message.role == "tool":
            text = "; ".join(f"{r.tool_name}: {r.content}" for r in message.tool_results)
        _say(f"  {message.role:>9}: {text[:200]}{'  -> ' + calls if calls else ''}")
    if status == "interrupted":  # (a live process runs the others: their calls go on)
        # A sub-agent's call is taken up again with its own run, not reported as interrupted.
        delegated = {sub.parent_tool_call_id for sub in store.sub_runs(args.run_id)}
        for call in state.calls.values():
            if call.status == "started" and call.tool_call_id not in delegated:
                _say(
                    f"\nTool call {call.tool_call_id} ({call.tool_name} "
                    f"{(call.args or '{}')[:200]}) had started when the run's process ended, "
                    "and has no result: when the run resumes, the model is told it was "
                    "interrupted, unless its tool is marked idempotent (then it runs again). "
                    "Check what it did first."
                )
    if status == "interrupted":
        _say_decided(store, state)
    for item in queued:
        text = " ".join((item.message.content or "").split())
        if ended:
            _say(f"\nMessage sent with steer that the run never read: it ended first ({item.id}):")
        elif item.id in held:
            _say(f"\nMessage sent with steer, taken by the run and not read yet ({item.id}):")
        else:
            _say(f"\nMessage sent with steer, waiting for the run to take it ({item.id}):")
        _say(f"  {text[:200]}{'...' if len(text) > 200 else ''}")
    if not pending:
        _say("No pending approvals or questions.")
    for record in pending:
        ids = f"{state.run_id} {record.id}"
        late = store.too_late(record.run_id, record)
        if late is not None:  # (no command to decide it: it would be refused)
            if record.kind == "question":
                _say(f"\nPending question {record.id}\n  {late}")
                continue
            _say(f"\nPending approval {record.id}: {record.tool_name} {_readable(record.args)}")
            _say(f"  {late}")
            _say_edits(store, record)
            continue
        # A sub-agent's: which agents it comes from (two may wait at once).
        from .records import path_label

        asked_by = f"  asked by: {path_label(record.path)}" if len(record.path) > 1 else None
        if record.kind == "approval":
            _say(f"\nPending approval {record.id}: {record.tool_name} {_readable(record.args)}")
            if asked_by:
                _say(asked_by)
            if record.reason:
                _say(f"  reason: {record.reason}")
            # A typed output that failed validation: approving it needs the fix.
            fix = " --args '{...the fixed arguments...}'" if record.fix_required else ""
            _say_edits(store, record)
            _say(f"  {'fix it' if fix else 'decide'}: {command} approve {ids}{fix}")
            _say(f"      or: {command} reject {ids} --reason ...")
            continue
        _say(f"\nPending question {record.id}:")
        if asked_by:
            _say(asked_by)
        for question in record.questions:
            choices = ", ".join(f"{c.value!r} ({c.label})" for c in question.choices)
            offered = f"choices: {choices}" if choices else "(no choices: a text of your own)"
            if choices and not question.allows_custom:
                offered += " (only these)"
            _say(f"  [{question.id}] {question.question}  {offered}")
        picked = [_example(q, choose=True) for q in record.questions]
        typed = [_example(q, choose=False) for q in record.questions]
        examples = [("answer", picked), ("    or", typed)]
        if picked == typed:
            examples = [("answer", typed)]
        for lead, example in examples:
            _say(f"  {lead}: {command} answer {ids} --json {shlex.quote(json.dumps(example))}")
        if record.declinable:
            _say(f"      or: {command} decline {ids}")
        _say("  (replace each <...> first: a choice's value, or a text of your own)")
    if pending and secret:
        _say(
            "\n(The commands above leave out the passwords the store's address holds: set "
            "PGPASSWORD to its login password first, or write them back into the address.)"
        )
    if status == "interrupted":
        _say_resume(store, state, written or args.store)
    for record, edited, why in refused:
        _say(f"\nEdited arguments for {record.tool_name} ({record.id}, {record.status}), refused:")
        _say(f"  {_readable(edited)}: {why}")


def _refused_edits(
    store: RunStore, run_id: str
) -> list[tuple[ApprovalRecord, dict[str, Any], str]]:
    """The edits sent for the decided approvals of the run and of its sub-agents' runs (which
    the command line decides by the run's id too) that were refused, with the run's words
    (those of approvals still pending are listed with them)."""
    return [
        (record, edited, why or "")
        for run in store.run_tree(run_id)
        for record in store.interactions(run)
        if record.kind == "approval" and not record.pending
        for status, edited, why in store.edit_requests(record.id)
        if status == "refused"
    ]


_OWN = "<your own answer>"


def _pick(question: Question) -> str:
    return f"<one of: {', '.join(c.value for c in question.choices)}>"


def _example(question: Question, *, choose: bool) -> dict[str, Any]:
    """The answer ``show`` suggests: a choice, or a text of the person's own. A question without
    choices (a form's text or number field) takes a text only; one that only its choices answer
    (a form's field of fixed values) a choice only."""
    if question.choices and (choose or not question.allows_custom):
        return {"questionId": question.id, "answer": _pick(question), "choice": _pick(question)}
    return {"questionId": question.id, "answer": _OWN, "custom": True}


def _refuse_placeholders(answers: list[Any]) -> None:
    """Refuse the answer command ``show`` suggests when it is sent without filling it in."""
    for answer in answers:
        text = answer.get("answer") if isinstance(answer, dict) else None
        if isinstance(text, str) and (text == _OWN or text.startswith("<one of: ")):
            raise DecisionRefusedError(
                f"--json still holds the placeholder {text!r}: replace it with one of the "
                'question\'s choices (the same value in "answer" and "choice"), or with a '
                'text of your own (with "custom": true).'
            )


def _call_line(call: Any, questions: dict[str, QuestionRecord], approvals: list[Any]) -> str:
    """A tool call of the conversation, readable: a question's as :func:`_question_call`, an
    approved call's with the edited arguments it ran with (the model's alone misled).
    ``approvals`` (oldest first): each is the call's whose id and arguments it has, taken from
    the list once it is (a model may give two calls the same id)."""
    if call.id in questions:
        return _question_call(questions[call.id])
    line = f"{call.name}({call.arguments})"
    args = call.arguments if isinstance(call.arguments, dict) else _json_or_none(call.arguments)
    mine = [a for a in approvals if (a.tool_call_id, a.tool_name) == (call.id, call.name)]
    # (its record holds the arguments as the tool read them, defaults filled in)
    approval = next((a for a in mine if _holds(a.args, args)), mine[0] if len(mine) == 1 else None)
    if approval is not None:
        approvals.remove(approval)
        if approval.status == "approved" and approval.edited_args is not None:
            line += f" approved with edited arguments {_readable(approval.edited_args)}"
    return line


def _holds(recorded: Any, sent: Any) -> bool:
    """Whether an approval's arguments are those the model sent: the same, or with more (the
    defaults the tool filled in)."""
    if isinstance(recorded, dict) and isinstance(sent, dict):
        return all(key in recorded and recorded[key] == value for key, value in sent.items())
    return bool(recorded == sent)


def _json_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _question_call(record: QuestionRecord) -> str:
    """A question's call, readable: its raw arguments repeat what the pending question shows."""
    if record.status == "pending":
        return f"{record.tool_name}: pending question {record.id}, below"
    asked = " / ".join(" ".join(q.question.split()) for q in record.questions)
    return f"{record.tool_name}: {asked} ({record.status})"


def _json_arg(text: str, what: str, kind: type, shape: str) -> Any:
    """``text`` read as JSON, which must be a ``kind`` (``shape`` says what it must be)."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise DecisionRefusedError(f"{what} is not valid JSON: {error.msg}.") from None
    except RecursionError:
        raise DecisionRefusedError(f"{what} is nested too deeply to be read.") from None
    if not isinstance(value, kind):  # (null would approve the call unedited)
        raise DecisionRefusedError(f"{what} must be {shape}.")
    return value


def _decide(store: RunStore, args: argparse.Namespace) -> None:
    """Approve, reject, answer or decline (``RunStore``'s method of the command's name)."""
    item_id, _, done = DECISIONS[args.command]
    given: dict[str, Any] = {"via": "cli"}
    if args.command in ("approve", "reject"):
        given["reason"] = args.reason
    if args.command == "approve" and args.args is not None:
        given["args"] = _json_arg(args.args, "--args", dict, "a JSON object")
    if args.command == "answer":
        given["answers"] = _json_arg(args.answers, "--json", list, "a JSON list of answers")
        _refuse_placeholders(given["answers"])
    record = getattr(store, args.command)(args.run_id, getattr(args, item_id), **given)
    if record.pending:  # edited arguments: they wait for the run to check them
        print(store.edit_waits(record.run_id, record.id))
        return
    print(f"{done} {getattr(args, item_id)}.")
    waits = store.decision_waits(record.run_id)
    if waits is not None:
        print(waits)


def _not_text(args: argparse.Namespace) -> str | None:
    """The first argument that is not valid text (bytes that are not UTF-8 reach ``sys.argv``
    as lone surrogates, which no store can look up), as a message; None when all are."""
    for name, value in vars(args).items():
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                shown = value.encode("utf-8", "surrogateescape").decode("ascii", "backslashreplace")
                what = name.replace("_", " ")
                return f"The {what} '{shown}' is not valid UTF-8 text; check how it was typed."
    return None


def _steer(location: str, args: argparse.Namespace) -> None:
    """Only the store's connection is opened (the runtime is not loaded): a message from the
    terminal reaches the run within a second, even on a busy machine."""
    from .store._steer_write import steer_stored

    sent = steer_stored(location, args.run_id, args.text)
    if sent is None:  # an older store (migrated first), or not a run store (RunStore says so)
        from .store import RunStore

        store = RunStore(location)
        try:
            store.steer(args.run_id, args.text)
            status = store.status(args.run_id)
            top = store.top_run(args.run_id)
        finally:
            store.close()
    else:
        _, status, top = sent
    if status == "interrupted" and top is not None:
        # A sub-agent's run goes on only inside its top-level run: resuming it alone would
        # answer nobody.
        print(
            f"Queued for run {args.run_id}, a sub-agent's run inside run {top[0]}. Its process "
            f"is gone: the message is delivered when that run is resumed with its agent "
            f"{top[1]!r} (agent.resume({top[0]!r}))."
        )
    elif status == "interrupted":
        print(
            f"Queued for run {args.run_id}. Its process is gone: the message is delivered when "
            f"the run is resumed (agent.resume({args.run_id!r}))."
        )
    else:
        print(
            f"Sent to run {args.run_id}: the agent reads it after its current step (or before "
            "it would finish, and then goes on)."
        )


#: The exit status when the output's reader stopped reading (``runs | head``): what a shell
#: gives a command SIGPIPE ended (128 + 13), as ``git`` or ``cat`` exit there; 1 said a
#: decision was refused.
STOPPED_READER = 141


def _empty_file(location: str) -> bool:
    """Whether ``location`` is a file with nothing in it (not yet a run store: a read of it must
    not make it one)."""
    try:
        return os.path.isfile(location) and os.path.getsize(location) == 0
    except OSError:
        return False


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:  # (the command itself, not a call of main() from Python)
        _text_any_terminal_shows()
    args = _parser().parse_args(argv)
    wrong = _not_text(args)
    if wrong is not None:
        print(f"error: {wrong}", file=sys.stderr)
        return 2
    if args.store is not None and not args.store.strip():
        # (``--store "$TEAM_STORE"`` with the variable unset must not act on another store)
        print(
            "error: --store was given an empty location; name a file or a postgresql:// address.",
            file=sys.stderr,
        )
        return 2
    location = args.store or default_location()
    if location is None:
        print(f"Runs are not stored ({STORE_ENV} is off); use --store PATH.", file=sys.stderr)
        return 2
    problem = location_problem(location)
    if problem is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if not is_postgres_address(location):
        location = os.path.abspath(os.path.expanduser(location))
        if args.store:
            args.store = location  # the commands it suggests work from any folder
        if not os.path.exists(location) or _empty_file(location):
            # Opening the store would make one there (and its folder): say where it looked.
            where = f"there is no run store at {location}"
            if os.path.exists(location):
                where += " (the file is empty)"
            return _no_store(args, where)
    try:
        code = _run_command(location, args)
        sys.stdout.flush()  # (here, where a reader that stopped is noticed)
        return code
    except BrokenPipeError:  # (the output went to a reader that stopped: ``| head``)
        _drop_the_output()
        return STOPPED_READER
    except OSError as error:  # the output could not be written (a full disk)
        if error.errno not in _WRITE_FAILURES:
            raise
        _drop_the_output()
        why = error.strerror or str(error)
        print(f"error: the output could not be written: {why}.", file=sys.stderr)
        return 1
    except KeyboardInterrupt:  # Ctrl-C (waiting for a store another process holds locked)
        print("Interrupted.", file=sys.stderr)
        return 130


#: Why writing the output may fail: a full disk or quota, a device error, a file too large.
_WRITE_FAILURES = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EFBIG})


def _drop_the_output() -> None:
    """What is left of the output goes nowhere (Python would try to write it again at exit)."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _text_any_terminal_shows() -> None:
    """A character the output's encoding has not (the arrow between a sub-agent and its parent
    on an ASCII terminal) is written as its escape, ``\u203a``, instead of failing the command
    half-way."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(Exception):
                reconfigure(errors="backslashreplace")


def _no_store(args: argparse.Namespace, where: str, hint: bool = True) -> int:
    """What a command says when there is no run store ``where`` it looked (none is made);
    ``hint``: where a notebook keeps its runs (a file store)."""
    said = f"\n{_WHERE_NOTEBOOKS_STORE}" if hint else ""
    if args.command == "runs":
        if args.json:
            print("[]")
        else:
            print(f"No stored runs: {where}.{said}")
        return 0
    print(f"error: No stored run {args.run_id!r}: {where}.{said}", file=sys.stderr)
    return 1


def _run_command(location: str, args: argparse.Namespace) -> int:
    try:
        if is_postgres_address(location):
            from .store._store import empty_database

            if empty_database(location):  # (opening it as a store would make it one)
                where = f"there is no run store in {shown_url(location)} (it has no tables)"
                return _no_store(args, where, hint=False)
        if args.command == "steer":
            _steer(location, args)
            return 0
        from .store import RunStore

        store = RunStore(location)
        if args.command == "runs":
            _print_runs(store, args)
        elif args.command == "show":
            _print_run(store, args)
        elif args.command in DECISIONS:
            _decide(store, args)
    except (ValueError, AnviaError) as error:  # (ValueError: a blank message)
        # (a decision in a run the store does not have is a RunNotFoundError too)
        notebook_file = isinstance(error, RunNotFoundError) and not is_postgres_address(location)
        hint = f"\n{_WHERE_NOTEBOOKS_STORE}" if notebook_file else ""
        print(f"error: {error}{hint}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
