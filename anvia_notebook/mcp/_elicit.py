"""Elicitation: a server asks the person for input during a call. Each field of its form is a
question (section 5) in the run's one interaction record, the same UI and store:

* an ``enum`` (with ``enumNames``, or ``oneOf`` of titled ``const`` values) gives choices;
* a boolean gives Yes / No;
* only the choices answer these two (a custom text must be one of the values; the page shows
  them without a custom answer box);
* a string, number or integer gives a custom answer only (no choices), checked against the
  field's schema and sent with its JSON type;
* an optional field also offers "Leave blank" (the field is then left out);
* an optional field a question cannot ask (say, a multi-select list) is left out of the
  questions, with a warning: the server gets no value for it, as if left blank.

Answered: ``accept`` with the values. The questions are ``declinable``: the person's Decline (the
form's button, ``RunHandle.decline``, ``RunStore.decline``, the command line) closes the record
``cancelled`` by the person, which answers ``decline``; Stop, a timeout or the runtime answers
``cancel``. A form that cannot be shown as
questions (a required field a question cannot ask, say a multi-select one), or a run with
nobody to ask, is answered ``decline`` with a warning. A URL elicitation shows the message and
the link, and waits for the person to say whether they have done what it asks.
"""

from __future__ import annotations

import asyncio
import json
import warnings
from collections.abc import Awaitable, Callable, Iterable
from concurrent.futures import Future
from typing import Any

from .._util import error_text
from ..decisions import Withdrawn
from ..errors import McpElicitationStopped
from ..question_types import Choice, Question, typed_answer
from ..records import QuestionRecord

__all__ = ["BLANK", "CallAsker", "asker_for_this_call", "form_questions", "elicit_result"]

#: The value of the "Leave blank" choice of an optional field.
BLANK = "(blank)"
DONE, DECLINE, ACCEPT = "done", "decline", "accept"

Ask = Callable[[list[Question]], Awaitable[QuestionRecord | None]]


class FormNotShown(ValueError):
    """A form field the questions cannot express."""


def _label(name: str, spec: dict[str, Any]) -> str:
    title = spec.get("title") or name
    description = spec.get("description")
    return f"{title}: {description}" if description and description != title else str(title)


def _fixed_values(spec: dict[str, Any]) -> list[Any]:
    """The values a field allows as the server wrote them (its ``enum``, or ``oneOf`` /
    ``anyOf`` consts); none when it is free."""
    if isinstance(spec.get("enum"), list):
        return list(spec["enum"])
    options = spec.get("oneOf") or spec.get("anyOf")
    if isinstance(options, list):
        return [o["const"] for o in options if isinstance(o, dict) and "const" in o]
    return []


def _enum_choices(spec: dict[str, Any]) -> list[Choice] | None:
    if isinstance(spec.get("enum"), list):
        names = spec.get("enumNames")
        values = spec["enum"]
        labels = names if isinstance(names, list) and len(names) == len(values) else values
        pairs = zip(labels, values, strict=True)
        return [_choice(label, value) for label, value in _once(pairs)]
    options = spec.get("oneOf") or spec.get("anyOf")
    if (
        isinstance(options, list)
        and options
        and all(isinstance(o, dict) and "const" in o for o in options)
    ):
        titled = ((o.get("title"), o["const"]) for o in options)
        return [_choice(label, value) for label, value in _once(titled)]
    return None


class _BlankValue(ValueError):
    """A fixed value written as a blank text: no choice can give it."""


def _choice(label: Any, value: Any) -> Choice:
    """The choice of ``value``, shown by ``label`` (the server's name or title), or by the
    value itself when the label is blank or missing (a blank label failed the whole form)."""
    text = _text(value)
    if not text.strip():
        raise _BlankValue
    named = "" if label is None else _text(label)
    return Choice(label=named if named.strip() else text, value=text)


def _text(value: Any) -> str:
    """A fixed value as a choice's text: ``true`` / ``false`` as JSON writes them (a boolean
    field's answer is read so), not Python's ``True``."""
    return json.dumps(value) if isinstance(value, bool) else str(value)


def _once(pairs: Iterable[tuple[Any, Any]]) -> list[tuple[Any, Any]]:
    """``(label, value)`` pairs with a value the server repeated as it is (``["a", "b", "a"]``:
    JSON Schema asks for unique values, but does not require them) kept once, with its first
    label: one choice, whose answer is that value. Values only written alike (``1`` and ``"1"``)
    are kept, and refused as such."""
    seen: set[str] = set()
    kept = []
    for label, value in pairs:
        written = _shown_as_written(value)
        if written not in seen:
            seen.add(written)
            kept.append((label, value))
    return kept


def form_questions(
    message: str, schema: dict[str, Any], left_out: list[str] | None = None
) -> list[Question]:
    """One question per field of the form; the server's message heads the first question.

    A field no question can ask raises :class:`FormNotShown`, unless ``left_out`` is given
    and the field is optional: its name is then appended to ``left_out`` and it is skipped."""
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or [])
    questions: list[Question] = []
    for name, spec in properties.items():
        try:
            question = _field_question(name, spec, name in required, message, not questions)
        except FormNotShown:
            if left_out is None or name in required:
                raise
            left_out.append(name)
            continue
        questions.append(question)
    return questions


def _field_question(name: str, spec: Any, required: bool, message: str, first: bool) -> Question:
    """The question for one field (the server's message heads the ``first`` one)."""
    if not isinstance(spec, dict):
        raise FormNotShown(f"field {name!r} has no schema")
    text = _label(name, spec)
    if first and message.strip():
        text = f"{message.strip()}\n\n{text}"
    kind = spec.get("type")
    try:
        choices = _enum_choices(spec)
    except _BlankValue:  # (a choice's value is never blank: the answer could not be given)
        raise FormNotShown(f"field {name!r} has a blank value no choice can give") from None
    if choices == []:  # (an empty enum: no answer could be taken, the person could only decline)
        raise FormNotShown(f"field {name!r} allows no value (its enum is empty)")
    if choices is not None and len({choice.value for choice in choices}) < len(choices):
        # (1 and "1" are the same choice on the page: picking one ticked both, and the answer
        # could not say which of them the person meant)
        alike = _alike(_fixed_values(spec))
        raise FormNotShown(
            f"field {name!r} has values written alike ({alike}): no choice tells them apart"
        )
    answer_schema: dict[str, Any] | None = None
    if choices is None and kind == "boolean":
        choices = [Choice(label="Yes", value="true"), Choice(label="No", value="false")]
    elif choices is None and kind in ("string", "number", "integer"):
        choices = []
        answer_schema = {
            key: value
            for key, value in spec.items()
            if key
            in (
                "type",
                "minimum",
                "maximum",
                "minLength",
                "maxLength",
                "pattern",
                "format",
                "exclusiveMinimum",
                "exclusiveMaximum",
            )
        }
    elif choices is None:
        raise FormNotShown(f"field {name!r} is of a kind a question cannot ask ({kind})")
    if answer_schema is None:  # a field of fixed values: a custom answer must be one of them
        answer_schema = {"enum": [choice.value for choice in choices]}
    if _may_be_blank(spec, required):
        # (a default the server gives is what leaving the field blank sends: said here)
        default = spec.get("default")
        named = [choice.label for choice in choices if choice.value == _text(default)]
        shown = named[0] if named else _shown(default)  # (a picked value by its label)
        label = "Leave blank" if default is None else f"Use the default ({shown})"
        choices = [*choices, Choice(label=label, value=BLANK)]
    return Question(id=name, question=text, choices=choices, answer_schema=answer_schema)


def _alike(values: list[Any]) -> str:
    """The first values of ``values`` written alike as a choice's text, as the server wrote them."""
    by_text: dict[str, list[Any]] = {}
    for _, value in _once((None, value) for value in values):
        by_text.setdefault(_text(value), []).append(value)
    same = next((group for group in by_text.values() if len(group) > 1), values)
    return " and ".join(_shown_as_written(value) for value in same)


def _shown_as_written(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _may_be_blank(spec: dict[str, Any], required: bool) -> bool:
    """An optional field may be left blank, unless the server itself offers the value
    :data:`BLANK` (then picking that is the server's value, not a blank)."""
    return not required and BLANK not in [str(value) for value in _fixed_values(spec)]


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _content(record: QuestionRecord, schema: dict[str, Any]) -> dict[str, Any]:
    properties = schema.get("properties") or {}
    required = schema.get("required") or []
    content: dict[str, Any] = {}
    for answer in record.answers:
        spec = properties.get(answer.question_id, {})
        if answer.choice == BLANK and _may_be_blank(spec, answer.question_id in required):
            if spec.get("default") is not None:  # the server's default, filled in for it
                content[answer.question_id] = spec["default"]
            continue
        if spec.get("type") == "boolean":
            content[answer.question_id] = answer.answer == "true"
        elif spec.get("type") in ("number", "integer"):  # (a choice of numbers too)
            content[answer.question_id] = typed_answer(spec, answer.answer)
        else:  # a fixed value as the server wrote it (a number of an enum without a type)
            fixed = [value for value in _fixed_values(spec) if not isinstance(value, str)]
            content[answer.question_id] = next(
                (value for value in fixed if _text(value) == answer.answer), answer.answer
            )
    return content


def _ended_action(record: QuestionRecord | None) -> str:
    if record is None:
        return "decline"
    if record.status == "cancelled" and record.decided_by == "human":
        return "decline"  # the person declined the form
    return "cancel"  # Stop, a timeout, the runtime


async def elicit_result(ask: Ask | None, params: Any, server_name: str) -> Any:
    """Answer one elicitation request with the person's answers (an ``ElicitResult``)."""
    import mcp.types as types

    if ask is None:
        return _told(
            "decline",
            f"The MCP server {server_name!r} asked for input ({getattr(params, 'message', '')!r})"
            " but this run has nobody to ask (no human input): it was declined.",
        )
    try:
        return await _elicit_result(ask, params, server_name)
    except McpElicitationStopped:
        return types.ElicitResult(action="cancel")
    except Exception as error:  # the human input failed: said here, not sent to the server
        return _told(
            "cancel",
            f"Asking for the input the MCP server {server_name!r} wanted failed "
            f"({type(error).__name__}: {error_text(error)}); the server was told cancel.",
        )


def _told(action: str, why: str) -> Any:
    """The server's answer when nobody was asked (``why``, said in a warning here)."""
    import mcp.types as types

    warnings.warn(why, UserWarning, stacklevel=3)
    return types.ElicitResult(action=action)


async def _elicit_result(ask: Ask, params: Any, server_name: str) -> Any:
    import mcp.types as types

    if getattr(params, "mode", "form") == "url":
        question = Question(
            id="confirm",
            question=f"{params.message}\n\n{params.url}\n\nOpen the link, then say when done.",
            choices=[
                Choice(label="Done", value=DONE),
                Choice(label="Decline", value=DECLINE),
            ],
        )
        record = await ask([question])
        if record is None or record.status != "answered":
            return types.ElicitResult(action=_ended_action(record))
        accepted = record.answers[0].answer == DONE
        return types.ElicitResult(action="accept" if accepted else "decline")
    schema = dict(params.requested_schema or {})
    left_out: list[str] = []
    try:
        questions = form_questions(params.message, schema, left_out)
        if left_out and not questions:
            raise FormNotShown(f"no field of it is one a question can ask ({', '.join(left_out)})")
    except FormNotShown as problem:
        return _told(
            "decline",
            f"The MCP server {server_name!r} asked for input with a form that cannot be shown "
            f"as questions ({problem}): it was declined.",
        )
    if not questions:
        # A form with no field asks only for a yes or a no ("Delete everything?"): the person
        # says it, nobody says it for them.
        confirm = Question(
            id="confirm",
            question=str(params.message),
            choices=[Choice(label="Accept", value=ACCEPT), Choice(label="Decline", value=DECLINE)],
        )
        record = await ask([confirm])
        if record is None or record.status != "answered":
            return types.ElicitResult(action=_ended_action(record))
        if record.answers[0].answer != ACCEPT:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={})
    if left_out:
        warnings.warn(
            f"The MCP server {server_name!r} asked for input with optional fields a question "
            f"cannot ask ({', '.join(left_out)}): they are left out, as if left blank.",
            UserWarning,
            stacklevel=2,
        )
    record = await ask(questions)
    if record is None:
        return await elicit_result(None, params, server_name)
    if record.status != "answered":
        return types.ElicitResult(action=_ended_action(record))
    return types.ElicitResult(action="accept", content=_content(record, schema))


#: Why a question an MCP server asked ends when the server's side gives up its request (the
#: server went away, or its call ended) before the person answered.
WITHDRAWN = "The MCP server withdrew this request (its call ended) before it was answered."


class CallAsker:
    """The current tool call's way to ask the person, callable from the MCP loop: the
    questions are asked by a task on the run's loop. :meth:`stop` (on the run's loop) cancels
    those tasks and waits for them, so a question still asked is decided by the Stop, once,
    before the call ends."""

    def __init__(self, ask: Ask, run_loop: asyncio.AbstractEventLoop) -> None:
        self._ask = ask
        self._run_loop = run_loop
        self._tasks: set[asyncio.Task[QuestionRecord | None]] = set()
        self._stopped = False

    async def __call__(self, questions: list[Question]) -> QuestionRecord | None:
        result: Future[QuestionRecord | None] = Future()
        started: list[asyncio.Task[QuestionRecord | None]] = []

        def start() -> None:  # on the run's loop
            if self._stopped:
                result.cancel()
                return
            task = self._run_loop.create_task(_awaited(self._ask(questions)))
            started.append(task)
            self._tasks.add(task)
            task.add_done_callback(lambda done: self._settle(done, result))

        def cancel() -> None:  # on the run's loop: the server's side withdrew the request
            for task in started:
                task.cancel(Withdrawn(WITHDRAWN))
            if not started:
                result.cancel()

        self._run_loop.call_soon_threadsafe(start)
        wrapped = asyncio.wrap_future(result)
        try:
            await asyncio.wait({wrapped})  # a CancelledError here: this side was cancelled
        except asyncio.CancelledError:
            self._run_loop.call_soon_threadsafe(cancel)
            raise
        if wrapped.cancelled():  # the run stopped the call: the record says so already
            raise McpElicitationStopped()
        return wrapped.result()

    def _settle(
        self, task: asyncio.Task[QuestionRecord | None], result: Future[QuestionRecord | None]
    ) -> None:
        self._tasks.discard(task)
        if result.done():
            return
        if task.cancelled():
            result.cancel()
        elif task.exception() is not None:
            result.set_exception(task.exception())
        else:
            result.set_result(task.result())

    async def stop(self) -> None:
        """On the run's loop: no more questions; those still asked are cancelled, and this
        returns once they have recorded it."""
        self._stopped = True
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


def asker_for_this_call() -> CallAsker | None:
    """The current tool call's :class:`CallAsker`; None outside a run's tool call."""
    from .._tool_exec import TOOL_CALL_QUESTIONS

    ask = TOOL_CALL_QUESTIONS.get()
    if ask is None:
        return None
    return CallAsker(ask, asyncio.get_running_loop())


async def _awaited(value: Awaitable[QuestionRecord | None]) -> QuestionRecord | None:
    return await value
