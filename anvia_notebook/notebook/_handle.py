"""``RunHandle``: what ``request.show()`` returns: control of a live run and its transcript."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Generator, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import DecisionRefusedError, PromptCancelledError
from ..records import ApprovalRecord as _Approval
from . import _display
from ._blocking import await_serving_widgets
from ._session import TranscriptSession, decided_by_handler

if TYPE_CHECKING:
    from ..events import ApprovalRecord, QuestionRecord, RunEvent
    from ..run import AgentRun
    from ..run_state import PromptResponse
    from ..trace import Trace
    from ._widget import AnviaWidget

__all__ = ["AWAIT_CANCELLED_REASON", "RunHandle"]

#: Why a run stops when the cell (or task) awaiting its handle is interrupted or cancelled.
AWAIT_CANCELLED_REASON = "The cell awaiting this run was interrupted (Kernel > Interrupt)."


class RunHandle:
    """A shown run: ``cancel()``, ``steer()``, ``done``, ``status``, ``result()``, ``await handle``,
    ``events``, ``transcript``.

    Displaying the handle (in another cell) shows a second live view of the same run; when the
    run ends, every view's cell output also gets a static HTML copy of the final transcript.
    """

    def __init__(self, run: AgentRun, session: TranscriptSession) -> None:
        self._run = run
        self._session = session

    # -- the run -------------------------------------------------------------------------------

    @property
    def run(self) -> AgentRun:
        return self._run

    @property
    def run_id(self) -> str:
        return self._run.run_id

    def cancel(self, reason: str | None = None) -> bool:
        """Stop the run (from any thread). Returns False when it had already ended."""
        return self._run.cancel(reason)

    def steer(self, message: Any) -> bool:
        """Send ``message`` (a str, a Message or a list of Messages) into the run, as
        ``request.steer``: delivered after the current turn's tool results, or before the run
        would end (it then goes on). False once the run has ended."""
        return self._run.steer(message)

    @property
    def done(self) -> bool:
        return self._run.done

    @property
    def status(self) -> str:
        """``running``, ``waiting`` (for a person), ``success``, ``error`` or ``cancelled``."""
        status = self._run.status
        return "running" if status == "pending" else status

    def result(self) -> PromptResponse:
        """The response of the finished run (raises its error, or if it is still running)."""
        return self._run.result()

    async def wait(self) -> PromptResponse:
        """Wait for the end; returns the response or raises the run's error.

        Interrupting the cell that waits (Kernel > Interrupt during ``await handle``) or
        cancelling the waiting task stops the run too, as ``send_sync()`` does, and raises
        ``PromptCancelledError`` once the cancellation is recorded in the transcript.
        """
        try:
            # ipykernel < 7.4 (Colab's 6.17.1) runs no widget message while a cell awaits: the
            # wait serves them, or a run waiting for a click would hang.
            return await await_serving_widgets(self._run.wait())
        except (asyncio.CancelledError, KeyboardInterrupt):
            if self._run.done:
                raise
            self._run.cancel(AWAIT_CANCELLED_REASON)
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await self._run.wait()  # a second interrupt stops only this wait
            reason = self._run.state.cancel_reason or AWAIT_CANCELLED_REASON
            raise PromptCancelledError(reason, list(self._run.state.messages)) from None
        finally:
            if self._run.done:  # the cell's output is the static copy before the cell goes on
                self._session.refresh_pending()

    def __await__(self) -> Generator[Any, None, PromptResponse]:
        return self.wait().__await__()

    # -- pending approvals and questions ---------------------------------------------------------

    @property
    def pending(self) -> list[ApprovalRecord | QuestionRecord]:
        """The approvals and questions waiting for a person now."""
        return self._run.interactions.pending

    def approve(
        self,
        approval: str | ApprovalRecord,
        reason: str | None = None,
        args: dict[str, Any] | None = None,
    ) -> ApprovalRecord:
        """Approve a pending approval (its id or its record, e.g. ``handle.pending[0]``), as the
        widget's Approve button does (``args`` replace the call's arguments and are validated).
        A second decision raises ``DecisionRefusedError``, and so does one of an approval the
        run's approval handler decides (as the widget refuses it)."""
        self._not_the_handlers(approval)
        return self._run.interactions.decide(
            approval, approved=True, reason=reason, args=args, via="handle"
        )

    def reject(self, approval: str | ApprovalRecord, reason: str | None = None) -> ApprovalRecord:
        """Reject a pending approval (its id or its record); the tool does not run."""
        self._not_the_handlers(approval)
        return self._run.interactions.decide(approval, approved=False, reason=reason, via="handle")

    def _not_the_handlers(self, approval: Any) -> None:
        item_id = approval.id if isinstance(approval, _Approval) else approval
        if not isinstance(item_id, str) or self._run.interactions.get(item_id) is None:
            return  # (an unknown id: the decision says so)
        if decided_by_handler(self._run, item_id):
            raise DecisionRefusedError(
                "This run's approvals are decided by its approval handler, not from the notebook."
            )

    def answer(self, question: str | QuestionRecord, answers: Sequence[Any]) -> QuestionRecord:
        """Answer a pending question (its id or its record): one ``{"questionId", "answer",
        "choice"?, "custom"?}`` (or :class:`~anvia_notebook.Answer`) per question."""
        return self._run.interactions.answer(question, answers, via="handle")

    def decline(self, question: str | QuestionRecord) -> QuestionRecord:
        """Decline a pending question an MCP server asked (its id or its record), as the
        widget's Decline button does: the server is told ``decline``. ``ask_question``'s
        questions cannot be declined (``DecisionRefusedError``)."""
        return self._run.interactions.decline(question, via="handle")

    @property
    def trace(self) -> Trace:
        """What the model received and returned on each turn, and what each tool call did (as
        far as the run got)."""
        return self._run.trace

    @property
    def events(self) -> list[RunEvent]:
        """The run's events so far."""
        return list(self._run.events)

    # -- the transcript ------------------------------------------------------------------------

    @property
    def transcript(self) -> list[dict[str, Any]]:
        """The transcript entries now, as plain data (the wire ``Entry`` dicts)."""
        return self._session.transcript.entries

    @property
    def widget(self) -> AnviaWidget:
        return self._session.widget

    @property
    def session(self) -> TranscriptSession:
        return self._session

    # -- display -------------------------------------------------------------------------------

    def _ipython_display_(self) -> None:
        # ``request.show()`` as a cell's last line returns this handle: its view is already in
        # this cell, so only another cell gets a second view.
        here = _display.current_message_id()
        if here is not None and here in self._session.displayed_in:
            return
        self._session.display()

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        return self._session.bundle()

    def __repr__(self) -> str:
        return f"RunHandle(run_id={self.run_id!r}, status={self.status!r})"

    if not TYPE_CHECKING:  # (hidden from type checkers, which would accept any attribute)

        def __getattr__(self, name: str) -> Any:
            """Only attributes the handle lacks come here: those of the run's response say how to
            get it, any other is the usual error (as ``hasattr``, IPython and pickle expect)."""
            if name in _RESPONSE_FIELDS:
                raise AttributeError(
                    f"A RunHandle has no `{name}`: it is the run shown in the cell, not its "
                    f"response. Get the response with `response = await handle` (it waits for "
                    f"the run to end), or `response = handle.result()` once the run has ended "
                    f"(`handle.done`), then use `response.{name}`.",
                    name=name,
                    obj=self,
                )
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}", name=name, obj=self
            )


#: What a newcomer reads on a handle, mistaking it for the run's ``PromptResponse``.
_RESPONSE_FIELDS = frozenset({"output", "data", "messages", "usage"})
