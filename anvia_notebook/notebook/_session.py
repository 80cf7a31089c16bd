"""``TranscriptSession``: one widget, its transcript, its batcher and the page's requests.

Threads: the transcript and the batcher belong to one event loop (``loop``: the run's loop, or
the kernel's loop for a Studio). Widget handlers may run on any thread (the main thread, a
kernel subshell thread, ...): a message is validated where it arrives, then handed to ``loop``
with ``call_soon_threadsafe``; its reply is sent from there. With no loop (a finished run), the
frozen state is read under a lock in the calling thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import html
import logging
import os
import sys
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .._tool_exec import INTERACTION_EVENTS
from .._util import blank, cli_command, quoted
from ..decisions import check_kind
from ..errors import DecisionRefusedError
from ..events import (
    AgentToolEvent,
    CancelledEvent,
    ErrorEvent,
    FinalEvent,
    RunEvent,
    ToolApprovalRequestEvent,
    ToolQuestionRequestEvent,
    TurnEndEvent,
)
from ..records import approval_scope
from ..store._location import is_postgres_address
from . import _capture, _display
from ._batcher import DEFAULT_INTERVAL, Batcher
from ._human_input import ALWAYS_ALLOWED_REASON, WidgetHumanInput
from ._inspect import SubRun, inspect_turn, sub_runs_of
from ._protocol import (
    ApprovalDecisionMsg,
    InspectMsg,
    ProtocolError,
    QuestionAnswersMsg,
    QuestionDeclineMsg,
    SteerMsg,
    StopMsg,
    inspect_reply_message,
    parse_inbound,
    reply_message,
    snapshot_message,
)
from ._snapshot import render_html, render_text
from ._transcript import Transcript
from ._widget import AnviaWidget
from ._wire_text import sendable

#: Seconds an approval or question waits while no page has shown the widget before the kernel
#: process's own error output says how a notebook run unattended goes on (see
#: :meth:`TranscriptSession._waits_unseen`).
UNSEEN_SECONDS = 10.0

if TYPE_CHECKING:
    from .._tool_exec import CurrentToolCall
    from ..run import AgentRun

__all__ = ["FLUSH_NOW", "LIVE_SLOT_CLASS", "TranscriptSession"]

logger = logging.getLogger("anvia_notebook")

#: The class of the element around a static copy that a page with the live model covers.
LIVE_SLOT_CLASS = "anvia-live-slot"

#: Events after which the batch goes out at once (buttons appear, the end is shown, a turn's
#: text is complete: its last piece shows before the end-of-turn work, ...).
FLUSH_NOW: frozenset[type[Any]] = frozenset(
    (
        ToolApprovalRequestEvent,
        ToolQuestionRequestEvent,
        TurnEndEvent,
        FinalEvent,
        CancelledEvent,
        ErrorEvent,
    )
)

#: The events that end a run (the trace has the run's whole time by then).
RUN_ENDS: frozenset[type[Any]] = frozenset((FinalEvent, CancelledEvent, ErrorEvent))
#: Finish reasons of an answer the token limit cut (OpenAI's, Anthropic's).
CUT_AT_THE_LIMIT = frozenset(("length", "max_tokens"))
#: The finish reason of an answer a content filter stopped, or the model refused (Azure
#: OpenAI's filter, OpenAI's refusals and Anthropic's ``refusal`` are all told so).
FILTERED = "content_filter"
#: The finish reason of an answer the provider paused (Anthropic's ``pause_turn``: a long turn of
#: server tools) and that was still paused after the model asked it to go on a few times.
PAUSED = "pause_turn"

#: How long a Studio's saved copy may lag behind a turn's complete text while the run goes on.
#: The run's end usually comes at once after its last turn, and refreshes the copy with both:
#: each refresh redraws the live view in the page, so a reply makes one, not one per event.
STUDIO_COPY_LAG = 0.5

Handler = Callable[[Any], "str | None"]

#: The note above the first call of a resumed run that waits for a person.
RESUMED_NOTE = (
    "Resumed: what ran before is not run again; pending approvals and questions are shown "
    "again below."
)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class TranscriptSession:
    """The kernel side of one widget: transcript state, outbound batches, inbound requests."""

    def __init__(
        self,
        *,
        agent_id: str,
        loop: asyncio.AbstractEventLoop | None,
        human_input: WidgetHumanInput | None = None,
        mode: str = "transcript",
        title: str = "",
        interval: float = DEFAULT_INTERVAL,
    ) -> None:
        self.widget = AnviaWidget(handler=self.handle_message, mode=mode, title=title)
        self.batcher = Batcher(self._send, interval=interval)
        self.transcript = Transcript(agent_id, emit=self.batcher.push, append=self.batcher.append)
        self.human_input = human_input
        self.title = title or "Anvia transcript"
        self.mode = mode
        #: Each agent's display name by id when the widget shows one conversation per agent (a
        #: Studio): the static copy labels replies with it, as the page does; None: "Assistant".
        self.agent_names: dict[str, str] | None = None
        self.run: AgentRun | None = None
        #: What Inspect reads while no run is shown: a stored run (a Studio session opened
        #: from the run store), or None.
        self.stored_run: Callable[[], SubRun | None] | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.set_loop(loop)
        self._lock = threading.RLock()
        self._unsubscribe: Callable[[], None] | None = None
        self._done_listeners: list[Callable[[AgentRun], None]] = []
        self._displays: list[tuple[str, dict[str, Any] | None]] = []
        #: A refresh of the displays to come (see :meth:`refresh_displays_later`), and its loop.
        self._refresh_timer: asyncio.TimerHandle | None = None
        self._refresh_loop: asyncio.AbstractEventLoop | None = None
        #: The end of the run was awaited before that refresh was scheduled: make it at once.
        self._refresh_awaited = False
        #: A Studio's refresh after a turn's text (see :data:`STUDIO_COPY_LAG`).
        self._copy_timer: asyncio.TimerHandle | None = None
        #: What each display (by id) was last sent: a refresh that would change nothing is not
        #: sent (it would only redraw the live view, and a key typed meanwhile could be lost).
        self._shown: dict[str, dict[str, Any]] = {}
        #: Output tools printed from other threads, not yet handed to the loop (one hand-over
        #: for many prints: a sync tool printing in a loop must not wake the loop each time).
        self._printed: list[tuple[CurrentToolCall, str]] = []
        self._printed_lock = threading.Lock()
        #: A page has shown the widget (it asked for its snapshot); the hint of
        #: :meth:`_waits_unseen` was given.
        self._seen = False
        self._hinted = False
        self.handlers: dict[str, Handler] = {
            "sync": self._on_sync,
            "approval_decision": self._on_approval_decision,
            "question_answers": self._on_question,
            "question_decline": self._on_question,
            "stop": self._on_stop,
            "steer": self._on_steer,
        }

    # -- threads -------------------------------------------------------------------------------

    def set_loop(self, loop: asyncio.AbstractEventLoop | None) -> None:
        """Make ``loop`` the owner of the state (call it on that loop, or before it runs)."""
        self.loop = loop
        self.batcher.bind(loop)

    def call_soon(self, fn: Callable[..., Any], *args: Any) -> None:
        """Run ``fn(*args)`` on the owning loop (from any thread); inline when there is none."""
        loop = self.loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(fn, *args, context=contextvars.Context())
                return
            except RuntimeError:  # closed meanwhile: the state is frozen now
                pass
        with self._lock:
            fn(*args)

    def on_loop(self, fn: Callable[..., Any], *args: Any) -> None:
        """Like :meth:`call_soon`, but at once when already on the owning loop."""
        if self.loop is not None and _running_loop() is self.loop:
            fn(*args)
        else:
            self.call_soon(fn, *args)

    # -- outbound ------------------------------------------------------------------------------

    def _send(self, message: dict[str, Any]) -> None:
        try:
            try:
                self.widget.send(message)
            except UnicodeEncodeError:  # text with a lone surrogate: sent with U+FFFD instead
                self.widget.send(sendable(message))
        except Exception:  # a closed comm must not break the run
            logger.exception("Could not send a %s message to the widget", message.get("type"))

    def send(self, message: dict[str, Any]) -> None:
        """Send ``message`` to the widget's pages as it is (package-internal: Studio sends its
        own messages through its transcript's session); a closed comm is logged, not raised."""
        self._send(message)

    def send_snapshot(self) -> None:
        """Send the whole transcript. Every page of this widget gets it (the kernel's messages
        go to all of them), so what waits for the next batch goes in it instead of before it."""
        self.batcher.absorb()
        self._send(snapshot_message(self.transcript.state(self.batcher.seq)))

    def state(self) -> dict[str, Any]:
        """The whole transcript now (entries, status, seq)."""
        return self.transcript.state(self.batcher.seq)

    # -- inbound -------------------------------------------------------------------------------

    def handle_message(self, content: Any) -> None:
        """The widget's custom-message handler: may run on any thread."""
        try:
            message = parse_inbound(content)
        except ProtocolError as error:
            self._send(reply_message(error.request_id, str(error)))
            return
        self.call_soon(self._dispatch, message)

    def _dispatch(self, message: Any) -> None:
        if isinstance(message, InspectMsg):  # answered with the data, not a plain reply
            self._send(self._on_inspect(message))
            return
        handler = self.handlers.get(message.type)
        try:
            if handler is None:
                error: str | None = f"This widget does not handle {message.type} messages."
            else:
                error = handler(message)
        except DecisionRefusedError as refused:  # an approval's or a question's decision
            error = str(refused)
        except Exception as exc:
            logger.exception("Handling a %s message failed", message.type)
            error = f"Internal error: {exc}"
        self._send(reply_message(message.request_id, error))

    def _on_sync(self, _message: Any) -> str | None:
        self._seen = True
        self.send_snapshot()
        return None

    def _waits_unseen(self, event: Any) -> None:
        """An approval or question waits: when no page has shown the widget
        :data:`UNSEEN_SECONDS` later (a notebook run unattended: nbconvert, papermill), say
        once how to go on, on the kernel process's own error output (the terminal that runs
        them: the cell's output is not saved while it waits)."""
        if type(event) not in (ToolApprovalRequestEvent, ToolQuestionRequestEvent):
            return
        human = self.human_input
        loop = self.loop
        if self._seen or self._hinted or loop is None or getattr(human, "auto", None):
            return
        record = event.approval if type(event) is ToolApprovalRequestEvent else event.question
        loop.call_later(UNSEEN_SECONDS, self._hint_unseen, record.run_id, record.id, record.kind)

    def _hint_unseen(self, run_id: str, item_id: str, kind: str) -> None:
        run = self.run
        waiting = run is not None and any(r.id == item_id for r in run.interactions.pending)
        if self._seen or self._hinted or not waiting:
            return
        self._hinted = True
        with contextlib.suppress(Exception):  # (no error output: nothing to say it on)
            print(
                f"anvia_notebook: run {run_id} waits for a person to decide {kind} {item_id} in "
                "its widget, which no page shows. Running the notebook unattended (nbconvert, "
                "papermill)? Set ANVIA_NOTEBOOK_AUTO=approve (or reject) for a scripted "
                "operator, or decide from a terminal: "
                f"{self._cli()} show {run_id}",
                file=sys.__stderr__,
                flush=True,
            )

    def _on_approval_decision(self, message: ApprovalDecisionMsg) -> str | None:
        """A click on an approval's form, decided through the run's interactions (which refuse
        a decision that is not the first, or edited arguments the tool's input model rejects:
        the refusal is the reply)."""
        run = self.run
        open_one = run.interactions.get(message.approval_id) if run is not None else None
        if run is None or open_one is None:
            return f"Unknown approval {quoted(message.approval_id)}."  # (decide refuses it too)
        check_kind(open_one.record, "approval")
        if decided_by_handler(run, message.approval_id):
            return "This run's approvals are decided by its approval handler, not in this widget."
        try:
            edited = message.edited()
        except ValueError as error:
            return str(error)
        record = run.interactions.decide(
            message.approval_id,
            approved=message.approved,
            reason=message.reason,
            args=edited,
            via="widget",
        )
        # The "Always allow <tool> in this session" box (never for the fix of a typed output:
        # each one needs its own fix): later calls of the tool, on the same path for a
        # sub-agent's tool, are approved without asking, and those waiting now are approved
        # too. (The run goes on only after this handler: it runs on the run's loop.) Without a
        # widget human input only those waiting now are.
        if message.approved and message.always_allow and not record.fix_required:
            scope = approval_scope(record.path, record.tool_name)
            if self.human_input is not None:
                self.human_input.always_allowed.add(scope)
            for other in run.interactions.pending:  # (a question's decision is refused)
                if approval_scope(other.path, other.tool_name) == scope:
                    with contextlib.suppress(DecisionRefusedError):
                        run.interactions.decide(
                            other.id,
                            approved=True,
                            reason=ALWAYS_ALLOWED_REASON,
                            decided_by="policy",
                            via="widget",
                        )
        return None

    def _on_question(self, message: QuestionAnswersMsg | QuestionDeclineMsg) -> str | None:
        """Answers to a question, or the person declining it. Refused by the run's interactions
        too: a question this run never asked, one already settled, answers that break the
        question contract, or an ``ask_question`` question declined."""
        if self.run is None:
            return f"Unknown question {quoted(message.question_id)}."
        if isinstance(message, QuestionDeclineMsg):
            self.run.interactions.decline(message.question_id, via="widget")
        else:  # (the answers are read as any decider's are: no copy of them is made here)
            self.run.interactions.answer(message.question_id, message.answers, via="widget")
        return None

    def _on_inspect(self, message: InspectMsg) -> dict[str, Any]:
        """One model call of the shown run's trace, for the Inspect view (asked when opened):
        the run shown, else the stored run the transcript was rebuilt from."""
        run, stored = self.run, self.stored_run
        if run is None and stored is None:
            return inspect_reply_message(message.request_id, count=0, error="No run to inspect.")
        trace = None
        try:
            if run is not None:
                trace, sub_runs = run.trace, sub_runs_of(run)
            else:
                assert stored is not None
                shown = stored()
                if shown is None:
                    return inspect_reply_message(
                        message.request_id, count=0, error="No run to inspect."
                    )
                trace, sub_runs = shown.trace, shown.sub_runs
            count, turn = inspect_turn(trace, message.index, sub_runs)
        except IndexError as error:
            count = 0 if trace is None else len(trace.turns)
            return inspect_reply_message(message.request_id, count=count, error=str(error))
        except Exception as exc:
            logger.exception("Reading the trace for the Inspect view failed")
            return inspect_reply_message(
                message.request_id, count=0, error=f"Could not read the trace: {exc}"
            )
        return inspect_reply_message(message.request_id, count=count, turn=turn)

    def _on_stop(self, message: StopMsg) -> str | None:
        """Stop the shown run. Its Stop clicked once it had ended (in a second view of it, whose
        status had not said so yet) is no error: the run's status says how it ended."""
        run = self.run
        if run is None:
            return "No run in progress."
        if not run.done:
            run.cancel((message.reason or "").strip() or None)
        return None

    def _on_steer(self, message: SteerMsg) -> str | None:
        """The message box while a run goes: the text is steered into the run."""
        run = self.run
        if blank(message.text):
            return "The message is empty."
        try:
            sent = run is not None and not run.done and run.steer(message.text)
        except ValueError as error:  # text that is not valid Unicode: told, not an internal error
            return str(error)
        return None if sent else "No run in progress: the message was not sent."

    # -- runs ----------------------------------------------------------------------------------

    def attach(self, run: AgentRun) -> None:
        """Show ``run`` in this transcript (call on the run's loop thread, or before it starts)."""
        self.run = run
        self.transcript.begin_run(
            run.run_id, run.request.agent.id, run.request.prompt_message.content
        )
        _capture.register(run.run_id, self._on_output)
        if run.resumed:  # the note goes above the first call that waits (drawn by the replay)
            waiting = {r.tool_call_id for r in run.state.pending()}
            self.transcript.notice_before(waiting, RESUMED_NOTE)
        self._unsubscribe = run.subscribe(
            self._on_event, replay=True, on_text=self.transcript.text_delta
        )
        for call in run.trace.tool_calls:  # what its tools printed before this view
            if call.output:
                self.transcript.tool_output(run.run_id, call.id, f"trace:{call.id}", call.output)
        self.transcript.place_notice()  # nothing waits: at the end
        run.add_done_callback(self._on_done)

    def add_done_listener(self, listener: Callable[[AgentRun], None]) -> None:
        """Call ``listener(run)`` on the loop after a run has ended and its last batch is out."""
        self._done_listeners.append(listener)

    def _on_event(self, event: RunEvent) -> None:
        self.transcript.apply(event)
        kind = type(event)  # (by type: the per-delta path reads no field here)
        if kind is AgentToolEvent:
            self._on_nested_event(event)  # type: ignore[arg-type]
            return
        if kind in FLUSH_NOW:
            if kind in RUN_ENDS:  # its numbers are final: they go out with the end
                self._summarise()
                self._undelivered()
                if kind is FinalEvent:
                    self._cut_short()
            if self.mode == "studio" and self._displays:
                # A Studio stays live: its saved copy holds the run's end before the page hears
                # of it (the update goes out on the same channel, before the batch), so a
                # notebook saved once the reply is shown as done keeps it. A turn's complete
                # text is in the copy at the latest STUDIO_COPY_LAG later, for a run whose end
                # comes long after it (hooks, tools, a wait for a person).
                if kind in RUN_ENDS:
                    self.refresh_displays()
                elif kind is TurnEndEvent:
                    self._refresh_copy_soon()
            self.batcher.flush()
        if kind in INTERACTION_EVENTS:
            self._waits_unseen(event)
            if self._displays:
                # A notebook saved now shows what waits (or what was decided), and how to go on.
                self.refresh_displays()

    def _on_nested_event(self, event: AgentToolEvent) -> None:
        """A sub-agent's event: its approvals and questions go out (and into the saved copy)
        at once, as the run's own do."""
        inner: Any = event.event
        while type(inner) is AgentToolEvent:
            inner = inner.event
        kind = type(inner)
        if kind in INTERACTION_EVENTS:
            self._waits_unseen(inner)
            self.batcher.flush()
            if self._displays:
                self.refresh_displays()

    def _on_output(self, call: CurrentToolCall, text: str) -> None:
        """A tool printed ``text`` (in its own thread, or on the loop): kept with its call in
        the run, shown in its entry; from another thread, queued in order for the loop."""
        on_loop = self.loop is not None and _running_loop() is self.loop
        with self._printed_lock:
            queued = bool(self._printed) or not on_loop
            if queued:
                self._printed.append((call, text))
                if len(self._printed) > 1:
                    return  # a hand-over is on its way and will take this text too
        if queued:
            self.on_loop(self._take_output)
        else:
            self._show_output(call, text)

    def _take_output(self) -> None:
        with self._printed_lock:
            printed, self._printed = self._printed, []
        while printed:
            self._show_output(*_joined(printed))

    def _show_output(self, call: CurrentToolCall, text: str) -> None:
        run = self.run
        if run is not None and run.run_id == call.run_id:
            run.record_output(call.tool_call_id, text)
        self.transcript.tool_output(call.run_id, call.tool_call_id, call.internal_call_id, text)

    def _on_done(self, run: AgentRun) -> None:
        _capture.unregister(run.run_id)
        if self._unsubscribe is not None and self.run is run:  # (not a later run's)
            self._unsubscribe()
            self._unsubscribe = None
        self._summarise(run)
        self.batcher.flush()
        for listener in list(self._done_listeners):
            try:
                listener(run)
            except Exception:
                logger.exception("A run-end listener failed")

    def _undelivered(self) -> None:
        """The run ended (Stop, an error) with messages steered into it still queued."""
        run = self.run
        if run is None:
            return
        with run.lock:
            left = [item.message for item in run.state.steering]
        if left:
            self.transcript.undelivered(left)

    def _cut_short(self) -> None:
        """The answer ended at the model's token limit, a content filter stopped it, or the
        provider left it paused: said under it (it reads as whole)."""
        run = self.run
        turns = run.trace.turns if run is not None else []
        reason = turns[-1].response.finish_reason if turns else None
        if reason in CUT_AT_THE_LIMIT:
            self.transcript.notice(
                "The answer was cut short at the model's token limit (raise max_tokens, or ask "
                "it to go on)."
            )
        elif reason == FILTERED:
            self.transcript.notice(
                "The answer was stopped by the provider's content filter, or the model refused "
                "to answer: what it said may be cut short."
            )
        elif reason == PAUSED:
            self.transcript.notice(
                "The provider paused the answer (a long turn of its own tools, such as web "
                "search) and it was still paused after being asked to go on several times: what "
                "it said may be cut short. Ask it to go on."
            )

    def _summarise(self, run: AgentRun | None = None) -> None:
        """The ended run's time to the first token and its whole time join the status line
        (once: the same numbers again change nothing)."""
        run = run or self.run
        if run is None:
            return
        try:
            summary = run.trace.summary()
            self.transcript.run_summary(summary["first_token_ms"], summary["duration_ms"])
        except Exception:  # the summary is extra: the run's end must still reach the page
            logger.exception("Could not read the run's summary from its trace")

    # -- cell output ---------------------------------------------------------------------------

    @property
    def live(self) -> bool:
        """Whether a view of this session still needs the widget: a Studio always, a transcript
        until its run has ended (then the static copy says everything there is to say)."""
        if self.mode == "studio":
            return True
        run = self.run
        return run is None or not run.done

    def static_bundle(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The static HTML and text copy of the transcript, without the widget.

        A saved notebook reopened without its kernel shows this everywhere (JupyterLab, Notebook
        7, VS Code, GitHub, nbviewer): with the widget's mimetype in the bundle, JupyterLab would
        pick the widget and report its missing model instead.
        """
        state = self.state()
        # The slot names the widget: while its model lives in the page (this kernel session),
        # the page shows a live view of it instead (see js/src/slots.ts); elsewhere the copy is
        # all there is. Its text is never typeset as math ("$25 and $30" stays as written).
        slot = (
            f'<div class="{LIVE_SLOT_CLASS} anvia-key-{self.widget.anvia_key} '
            'tex2jax_ignore mathjax_ignore">'
        )
        names = self.agent_names
        cli = self._cli()
        try:
            text = render_text(state, self.title, agent_names=names, cli=cli)
            page = render_html(state, self.title, agent_names=names, cli=cli)
        except Exception:  # the run, its result and the live view go on without the copy
            logger.exception("The saved copy of %s could not be made", self.title)
            text = f"{self.title}: this saved copy could not be made (the error is in the log)."
            page = f"<p>{html.escape(text)}</p>"
        return {"text/plain": text, "text/html": f"{slot}{page}</div>"}, {}

    def _cli(self) -> str:
        """How to run the command line on the shown run's store, as written in a terminal (the
        store named by its absolute path; a PostgreSQL address is not written out)."""
        store = getattr(self.run, "store", None)
        location = getattr(store, "location", None)
        if not isinstance(location, str) or is_postgres_address(location):
            return cli_command()
        return cli_command(os.path.abspath(location))

    def bundle(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """What a view of this session shows: the widget with a static HTML and text copy of the
        transcript while :attr:`live`, the static copy alone afterwards."""
        static, _ = self.static_bundle()
        if not self.live:
            return static, {}
        bundle = self.widget._repr_mimebundle_()
        data, metadata = bundle if bundle is not None else ({}, {})
        return {**data, **static}, dict(metadata or {})

    def display(self) -> None:
        """Display a view in the current cell (live while :attr:`live`, else the static copy);
        :meth:`refresh_displays` updates it."""
        display_id = uuid.uuid4().hex
        data, metadata = self.bundle()
        _display.publish(data, metadata, display_id=display_id)
        self._displays.append((display_id, _display.current_parent()))
        self._shown[display_id] = data

    @property
    def displayed_in(self) -> list[str | None]:
        """The msg_id of each cell this session was displayed in."""
        return [_display.message_id(parent) for _, parent in self._displays]

    def refresh_displays_later(self, loop: asyncio.AbstractEventLoop, delay: float) -> None:
        """:meth:`refresh_displays` in ``delay`` seconds, on ``loop`` (the caller's), or at once
        on :meth:`refresh_pending`."""
        if self._refresh_timer is not None:
            self._refresh_timer.cancel()
            self._refresh_timer = None
        if self._refresh_awaited and _running_loop() is loop:
            self._refresh_awaited = False
            self.refresh_displays()
            return
        self._refresh_loop = loop
        self._refresh_timer = loop.call_later(delay, self.refresh_pending)

    def refresh_pending(self) -> None:
        """Make the refresh :meth:`refresh_displays_later` scheduled now (on its loop; from
        elsewhere it stays scheduled). Called before it is scheduled (the run's end was awaited
        before its done listeners ran), the refresh is made as soon as it is."""
        timer = self._refresh_timer
        if timer is None:
            self._refresh_awaited = True
            return
        if _running_loop() is not self._refresh_loop:
            return
        self._refresh_timer = None
        timer.cancel()
        self.refresh_displays()

    def _refresh_copy_soon(self) -> None:
        """:meth:`refresh_displays` within :data:`STUDIO_COPY_LAG`, unless one comes sooner."""
        loop = self.loop
        if loop is None or _running_loop() is not loop:
            self.refresh_displays()
        elif self._copy_timer is None:
            self._copy_timer = loop.call_later(STUDIO_COPY_LAG, self.refresh_displays)

    def refresh_displays(self) -> None:
        """Update every display with the current :meth:`bundle` (at the end of a run): a run's
        views become the static copy; a Studio's keep the widget, with a fresh static copy.
        A display already showing that bundle is left as it is."""
        if self._copy_timer is not None:
            self._copy_timer.cancel()
            self._copy_timer = None
        data, metadata = self.bundle()
        for display_id, parent in self._displays:
            if self._shown.get(display_id) == data:
                continue
            self._shown[display_id] = data
            try:
                _display.publish(data, metadata, display_id=display_id, update=True, parent=parent)
            except Exception:
                logger.exception("Could not update the transcript's cell output")


def decided_by_handler(run: AgentRun, item_id: str) -> bool:
    """Whether the approval ``item_id`` of ``run``'s tree is decided by an approval handler (that
    of the run that asked it): the widget's buttons and ``RunHandle`` then refuse to decide it
    (package-internal)."""
    return _asking_run(run, item_id).request.active_approval_handler is not None


def _asking_run(run: AgentRun, item_id: str) -> AgentRun:
    """The run that asked ``item_id``: ``run``, or the sub-agent's run below it that did (whose
    own approval handler, if it has one, decides its approvals)."""
    for child in run.children:
        if child.interactions.get(item_id) is not None:
            return _asking_run(child, item_id)
    return run


def _joined(printed: list[tuple[CurrentToolCall, str]]) -> tuple[CurrentToolCall, str]:
    """Take the first text of ``printed`` and those of the same call after it, as one."""
    call = printed[0][0]
    count = 1
    while count < len(printed) and printed[count][0] is call:
        count += 1
    texts = [text for _, text in printed[:count]]
    del printed[:count]
    return call, "".join(texts)
