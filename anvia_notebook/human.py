"""Human input: who decides approvals and answers questions when a run needs a person.

The notebook widget is one implementation; :class:`ConsoleHumanInput` and
:class:`CallbackHumanInput` are the others shipped here.
"""

from __future__ import annotations

import asyncio
import math
import numbers
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TextIO, runtime_checkable

from ._util import maybe_await
from .approvals import ApprovalDecision, ToolApprovalRequest, normalize_decision
from .errors import HumanInputTimeout as HumanInputTimeout  # (re-exported)
from .errors import HumanInputUnavailable as HumanInputUnavailable
from .question_types import Answer
from .questions import QuestionRequest
from .records import ApprovalRecord, QuestionRecord

__all__ = ["CallbackHumanInput", "ConsoleHumanInput", "HumanInput", "StoreHumanInput"]


@runtime_checkable
class HumanInput(Protocol):
    """Decides approvals and answers questions on behalf of a person."""

    async def approve(self, request: ToolApprovalRequest) -> ApprovalDecision: ...

    async def ask(self, request: QuestionRequest) -> list[Answer]: ...


async def wait_for_a_decision() -> Any:
    """Wait for ever: the run takes the decision made on the interaction itself (a click, the
    run store, the command line) or its time limit (the human input's ``timeout``)."""
    return await asyncio.get_running_loop().create_future()


#: The longest time limit a human input takes (ten years, in seconds): an interaction's
#: ``expires_at`` must still be a date.
MAX_TIMEOUT = 10 * 365 * 24 * 3600


def positive_timeout(timeout: float | None) -> float | None:
    """A human input's time limit: none (``None``, or ``math.inf``), or a positive number of
    seconds up to :data:`MAX_TIMEOUT`."""
    if timeout is None or timeout == math.inf:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise TypeError(f"timeout must be a number of seconds, not {type(timeout).__name__}")
    if not timeout > 0:  # (NaN too)
        raise ValueError("timeout must be a positive number of seconds")
    if timeout > MAX_TIMEOUT:
        raise ValueError(
            f"timeout must be at most {MAX_TIMEOUT} seconds (ten years); to wait without a "
            "time limit, leave it out (None)"
        )
    return timeout if isinstance(timeout, (int, float)) else float(timeout)  # (numpy's too)


class CallbackHumanInput:
    """Delegates to your own (sync or async) functions.

    ``approve(request)`` returns a bool or an :class:`ApprovalDecision`; ``ask(request)`` returns
    a list of :class:`Answer` (or dicts with ``questionId``/``answer``). Leaving one out means this
    input cannot decide that kind of request. ``timeout`` (seconds) applies to both: the run
    records the request as timed out and stops waiting for your function.
    """

    def __init__(
        self,
        approve: Callable[[ToolApprovalRequest], Any] | None = None,
        ask: Callable[[QuestionRequest], Any] | None = None,
        timeout: float | None = None,
    ) -> None:
        for name, given in (("approve", approve), ("ask", ask)):
            if given is not None and not callable(given):
                raise TypeError(
                    f"CallbackHumanInput({name}=...) takes a function (or None), not "
                    f"{type(given).__name__}."
                )
        self._approve = approve
        self._ask = ask
        self.timeout = positive_timeout(timeout)

    async def approve(self, request: ToolApprovalRequest) -> ApprovalDecision:
        if self._approve is None:
            raise HumanInputUnavailable("CallbackHumanInput was given no approve function")
        return normalize_decision(await maybe_await(self._approve(request)))

    async def ask(self, request: QuestionRequest) -> list[Answer]:
        if self._ask is None:
            raise HumanInputUnavailable("CallbackHumanInput was given no ask function")
        answers = await maybe_await(self._ask(request))
        # Dicts are checked and converted by the runtime (``check_operator_answers``, the check
        # the widget and the run store apply too), which refuses a blank, missing or mismatched
        # answer with a clear reason instead of a raw validation error. What is not a collection
        # of answers (None, a number, a text, one dict) is handed on as it is, for the runtime
        # to refuse with what it got.
        if isinstance(answers, (str, bytes, Mapping)) or not isinstance(answers, Iterable):
            return answers  # type: ignore[return-value]
        return list(answers)


#: Why a :class:`ConsoleHumanInput` could not ask (its input ended).
NO_TERMINAL = (
    "The input ended before an answer was given (ConsoleHumanInput reads answers from a "
    "terminal: run the script in one, or give the agent an approval handler)."
)


class ConsoleHumanInput:
    """Asks on a terminal: approvals as y/n (with an optional reason), questions by number.

    ``input_fn`` and ``output`` default to :func:`input` and ``sys.stdout``; prompts run on a
    worker thread so the event loop keeps going.
    """

    def __init__(
        self,
        input_fn: Callable[[str], str] = input,
        output: TextIO | None = None,
        timeout: float | None = None,
    ) -> None:
        self._input = input_fn
        self._output = output
        self.timeout = positive_timeout(timeout)

    def _print(self, text: str) -> None:
        print(text, file=self._output or sys.stdout, flush=True)

    async def _read(self, prompt: str) -> str:
        try:
            return str(await asyncio.to_thread(self._input, prompt)).strip()
        except EOFError:  # (a script run with no terminal: nohup, cron, CI, ``< /dev/null``)
            self._print(f"\n{NO_TERMINAL}")
            raise HumanInputUnavailable(NO_TERMINAL) from None

    async def approve(self, request: ToolApprovalRequest) -> ApprovalDecision:
        self._print(f"\nApproval required for {request.tool_name}")
        self._print(f"  arguments: {request.raw_args}")
        if request.reason:
            self._print(f"  reason: {request.reason}")
        while True:
            answer = (await self._read("Approve? [y/n] ")).lower()
            if answer in ("y", "yes"):
                return ApprovalDecision(approved=True)
            if answer in ("n", "no"):
                try:
                    why = await self._read("Reason (optional): ")
                except HumanInputUnavailable:  # (the input ended: no reason, still a "no")
                    why = ""
                return ApprovalDecision(approved=False, reason=why or None)
            self._print("Please answer y or n.")

    async def ask(self, request: QuestionRequest) -> list[Answer]:
        answers: list[Answer] = []
        for index, question in enumerate(request.questions, start=1):
            self._print(f"\nQuestion {index} of {len(request.questions)}: {question.question}")
            for number, choice in enumerate(question.choices, start=1):
                self._print(f"  {number}. {choice.label}")
            # A question only its choices answer (a form's field of fixed values) takes a
            # number: a custom text would be refused, and the form with it.
            own = question.allows_custom or not question.choices
            prompt = "Choice number or a custom answer: " if own else "Choice number: "
            while True:
                raw = await self._read(prompt)
                number = _choice_number(question, raw, by_name=not own)
                if number or (raw and own):
                    break
                self._print(
                    "Please pick a choice or type an answer."
                    if own
                    else f"Please pick a choice by its number (1-{len(question.choices)})."
                )
            picked = question.choices[number - 1] if number else None
            answers.append(Answer.picking(question, picked, raw))
        return answers


def _choice_number(question: Any, raw: str, *, by_name: bool) -> int:
    """The number (from 1) of the choice ``raw`` picks: its number, or (``by_name``: a question
    only its choices answer) its value or label, case aside; 0 for none."""
    choices = question.choices
    if raw.isascii() and raw.isdigit() and 1 <= int(raw) <= len(choices):
        return int(raw)
    if not by_name:
        return 0
    typed = raw.casefold()
    for number, choice in enumerate(choices, start=1):
        if typed and typed in (str(choice.value).casefold(), str(choice.label).casefold()):
            return number
    return 0


class StoreHumanInput:
    """Waits for a decision made elsewhere, through the run store.

    Nothing is asked here: each approval and question stays pending until someone decides it
    with ``RunHandle.approve/reject/answer``, ``RunStore(path).approve/reject/answer`` (in
    another notebook or process), or the command line (``python -m anvia_notebook approve
    RUN_ID APPROVAL_ID``). ``timeout`` (seconds) applies to each; then the request times out.
    """

    #: Nothing but a decision written to the run store reaches it (a run without a store, or
    #: whose store failed, cannot be decided this way).
    decided_through_the_store_only = True

    def __init__(self, timeout: float | None = None) -> None:
        self.timeout = positive_timeout(timeout)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(timeout={self.timeout!r})"

    async def approve(self, request: ToolApprovalRequest) -> ApprovalDecision:
        return await wait_for_a_decision()  # type: ignore[no-any-return]

    async def ask(self, request: QuestionRequest) -> list[Answer]:
        return await wait_for_a_decision()  # type: ignore[no-any-return]


def through_the_store_only(human: object) -> bool:
    """Whether ``human`` waits for decisions made through the run store only (a
    ``StoreHumanInput``): without one (``set_store(None)``, a store that failed), only this
    process can decide."""
    return getattr(human, "decided_through_the_store_only", False) is True


def warn_store_gone(record: ApprovalRecord | QuestionRecord) -> None:
    """Say that a run waiting through the store (``StoreHumanInput``) has no store to hear a
    decision from: only ``RunHandle.approve/reject/answer`` in this process can decide it (a
    script that used ``send()`` has none: it would wait for ever, silently)."""
    warnings.warn(
        f"{record.kind.capitalize()} {record.id} of run {record.run_id} waits for a decision "
        "made through the run store, but this run has no store (store(None), set_store(None), "
        "or a store that failed): the command line and other processes cannot decide it; only "
        "RunHandle.approve/reject/answer in this process can (or give the run a store, or "
        "another human input).",
        UserWarning,
        stacklevel=2,
    )
