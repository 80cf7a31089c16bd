"""The ``ask_question`` wire contract: questions in, answers out (keys exactly as Anvia's)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, overload

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import PydanticCustomError

from ._positional import PositionalFields
from ._util import blank, quoted

__all__ = [
    "Answer",
    "Choice",
    "Question",
    "QuestionInput",
    "check_operator_answers",
    "question_args_schema",
    "read_questions",
]


def _non_empty(what: str) -> AfterValidator:
    """A text stripped of surrounding blanks that must not be empty (``what`` names it)."""

    def strip(value: str) -> str:
        if not value.strip():
            raise ValueError(f"{what} must be a non-empty string")
        return value.strip()

    return AfterValidator(strip)


def _for_the_model(schema: dict[str, Any]) -> None:
    """The schema the model reads: its fields' descriptions (as Anvia's ``ask_question``
    example gives them), not the class's docstring, which is written for Python readers."""
    schema.pop("description", None)


class Choice(BaseModel):
    """One predefined answer: ``label`` is shown, ``value`` is what the model gets back."""

    model_config = ConfigDict(defer_build=True, extra="forbid", json_schema_extra=_for_the_model)

    label: Annotated[str, _non_empty("choice label and value")] = Field(
        description="The visible choice label."
    )
    value: Annotated[str, _non_empty("choice label and value")] = Field(
        description="The value returned to the model if selected."
    )


class Question(BaseModel):
    """One question put to the operator."""

    model_config = ConfigDict(defer_build=True, extra="forbid", json_schema_extra=_for_the_model)

    id: Annotated[str, _non_empty("question id")] = Field(
        description="Stable id for this question."
    )
    question: Annotated[str, _non_empty("question text")] = Field(
        description="The question to show to the human operator."
    )
    #: For a question from an MCP server's form (elicitation): the JSON Schema a custom answer
    #: must satisfy, with its JSON type (``string``, ``number``, ``integer``). Not part of the
    #: ``ask_question`` contract (the model never sees it).
    answer_schema: SkipJsonSchema[dict[str, Any] | None] = None
    #: At least one, as in Anvia; only a question with an ``answer_schema`` (a custom answer
    #: of a form's field) may have none.
    choices: list[Choice] = Field(
        json_schema_extra={"minItems": 1}, description="Choices to show before a custom input."
    )

    @field_validator("choices")
    @classmethod
    def _some_choice(cls, value: list[Choice], info: ValidationInfo) -> list[Choice]:
        if not value and info.data.get("answer_schema") is None:
            raise PydanticCustomError(
                "too_short", "List should have at least 1 item after validation, not 0"
            )
        return value

    @property
    def allows_custom(self) -> bool:
        """Whether a custom answer may answer it: not when only one of its choices does (an MCP
        server's form field of fixed values, an enum or a boolean: its ``answer_schema`` lists
        the values, and a custom text is refused unless it is one of them). The page shows such
        a question without a custom answer box."""
        return not isinstance((self.answer_schema or {}).get("enum"), list)


def _text(value: Any) -> str | None:
    """``value`` trimmed, if it is a text that is not blank."""
    return (value.strip() or None) if isinstance(value, str) else None


def _choice(raw: Any) -> dict[str, str] | None:
    """A choice as Anvia's Studio reads it, or None for one it drops (no usable label)."""
    raw = {"label": raw} if isinstance(raw, str) else raw
    label = _text(raw.get("label")) if isinstance(raw, dict) else None
    return None if label is None else {"label": label, "value": _text(raw.get("value")) or label}


def _question(raw: Any, position: int) -> Any:
    """A question as Anvia's Studio reads it (see :meth:`QuestionInput._normalise`)."""
    if not isinstance(raw, dict):
        return raw
    choices = raw.get("choices")
    if isinstance(choices, list):
        kept = [c for c in map(_choice, choices) if c]
        # With none left, the raw choices are checked instead, so the error names each one.
        choices = kept or [{"label": c} if isinstance(c, str) else c for c in choices]
    return {
        "id": _text(raw.get("id")) or f"q{position}",
        "question": raw.get("question"),
        "choices": choices,
    }


def read_questions(data: Any) -> Any:
    """``ask_question`` arguments as the run reads them (see :meth:`QuestionInput._normalise`);
    anything but a JSON object is left as it is."""
    if not isinstance(data, dict):
        return data
    if "questions" in data and not isinstance(data["questions"], list) and "question" not in data:
        return {"questions": data["questions"]}  # refused as "not a list", naming the key
    raw = data["questions"] if isinstance(data.get("questions"), list) else [data]
    questions = [_question(question, n) for n, question in enumerate(raw, start=1)]
    taken = {_text(q.get("id")) for q in raw if isinstance(q, dict)}
    for question, asked in zip(questions, raw, strict=True):
        if isinstance(asked, dict) and _text(asked.get("id")) is None:
            # A filled id is not one the model gave another question, nor one filled before
            # (it would be refused as repeated, for a repeat the model never wrote): q2_2,
            # q2_3, ... then.
            filled, n = question["id"], 1
            while question["id"] in taken:
                n += 1
                question["id"] = f"{filled}_{n}"
            taken.add(question["id"])
    return {"questions": questions}


#: Marks the JSON Schema kept with an approval of an ``ask_question`` call: its edited
#: arguments are read as questions (:func:`read_questions`) before the schema checks them, in
#: every process, as the run reads them.
READ_AS_QUESTIONS = "x-anvia-read-as-questions"


def question_args_schema() -> dict[str, Any]:
    """The JSON Schema that edited ``ask_question`` arguments are checked against."""
    return {**QuestionInput.model_json_schema(), READ_AS_QUESTIONS: True}


class QuestionInput(BaseModel):
    """The arguments of an ``ask_question`` call."""

    model_config = ConfigDict(defer_build=True, extra="forbid", json_schema_extra=_for_the_model)

    questions: list[Question] = Field(min_length=1)

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, data: Any) -> Any:
        """Model output as Anvia's Studio reads it: a single question may come without the
        ``questions`` list; a choice given as a plain string becomes ``{label: s, value: s}``, a
        missing or blank ``value`` takes the label, a choice without a label is dropped, a
        missing or blank question id is filled (``q1``, ``q2``, ... by position; ``q1_2`` where
        the model gave another question the id ``q1``), texts are
        trimmed and keys Anvia does not know are ignored."""
        return read_questions(data)

    @model_validator(mode="after")
    def _unique_ids(self) -> QuestionInput:
        seen: set[str] = set()
        for question in self.questions:
            if question.id in seen:
                raise ValueError(f"question ids must be unique; {question.id!r} is repeated")
            seen.add(question.id)
            values: set[str] = set()
            for choice in question.choices:
                if choice.value in values:  # (the answer could not say which one was chosen)
                    raise ValueError(
                        f"the choice values of question {question.id!r} must be unique; "
                        f"{quoted(choice.value)} is repeated"
                    )
                values.add(choice.value)
        return self


class Answer(PositionalFields):
    """The operator's answer to one question; serialised with the key ``questionId``."""

    model_config = ConfigDict(defer_build=True, populate_by_name=True, extra="forbid")
    #: ``Answer(question_id, answer, choice=None, custom=None)``, as the docs write it: each may
    #: be given by position; by name, the question's id is ``question_id`` or ``questionId``.
    positional = ("question_id", "answer", "choice", "custom")

    question_id: Annotated[str, _non_empty("questionId and answer")] = Field(alias="questionId")
    answer: Annotated[str, _non_empty("questionId and answer")]
    choice: str | None = None
    custom: bool | None = None

    if TYPE_CHECKING:  # (the signatures type checkers see; PositionalFields.__init__ runs)

        @overload
        def __init__(
            self,
            question_id: str,
            answer: str,
            choice: str | None = None,
            custom: bool | None = None,
        ) -> None: ...

        @overload
        def __init__(
            self,
            *,
            questionId: str,
            answer: str,
            choice: str | None = None,
            custom: bool | None = None,
        ) -> None: ...

        def __init__(self, *args: Any, **data: Any) -> None: ...

    @classmethod
    def picking(cls, question: Question, choice: Choice | None, text: str = "") -> Answer:
        """The answer to ``question`` that picks ``choice``, or (None) the custom ``text``."""
        if choice is None:
            return cls(question_id=question.id, answer=text, custom=True)
        return cls(question_id=question.id, answer=choice.value, choice=choice.value)

    def to_wire(self) -> dict[str, Any]:
        """The Anvia wire shape: ``{"questionId", "answer", "choice"?, "custom"?}``."""
        return self.model_dump(by_alias=True, exclude_none=True)

    @model_serializer(mode="wrap")
    def _dumped_with_anvias_key(self, handler: SerializerFunctionWrapHandler) -> Any:
        """Every dump (``model_dump``, the records' and events' JSON, the store, ``show --json``)
        has the key ``questionId``, as Anvia's contract writes it, not the field's name."""
        data = handler(self)
        if isinstance(data, dict) and "question_id" in data:
            data = {"questionId": data.pop("question_id"), **data}
        return data


def describe_validation_error(
    error: ValidationError, whole: str = "arguments", most: int | None = None
) -> str:
    """A compact, readable summary of a pydantic validation error (of its first ``most``
    problems); ``whole`` names the value itself where a problem is not in one of its parts."""
    return "; ".join(
        f"{'.'.join(map(str, item['loc'])) or whole}: {item['msg']}"
        for item in error.errors(include_url=False)[:most]
    )


def _given(answer: Any) -> tuple[Any, Any, Any, Any]:
    """``(question id, text, choice, custom)`` of an answer as given: a dict (keyed
    ``questionId``, or the Python name), or an object (an :class:`Answer`) by its attributes."""
    get: Callable[[str], Any] = (
        answer.get if isinstance(answer, Mapping) else lambda name: getattr(answer, name, None)
    )
    question_id = get("questionId")
    if question_id is None:
        question_id = get("question_id")
    return question_id, get("answer"), get("choice"), get("custom")


#: The longest answer text a person may give (as long as a reason may be).
MAX_ANSWER = 20_000


def _refusal(question: Question, text: Any, choice: Any, custom: Any) -> str | None:
    """Why one answer to ``question`` is refused, or ``None`` when it is acceptable.

    The one rule every path applies (the widget, a ``HumanInput``, the run store): the answer
    text is non-empty; a claimed ``choice`` is one of the question's declared values and the
    answer is that value (so a free text cannot pass itself off as a choice); an answer is
    either a choice or ``custom``, never both; and a custom answer to a question with an
    ``answer_schema`` fits it.
    """
    name = f"The answer to question {question.id!r}"
    if text is not None and not isinstance(text, str):
        return f"{name} must be a text, not {text!r}."
    if text is None and isinstance(choice, str):
        return f'{name} has a choice but no "answer": give the choice\'s value ({choice!r}) too.'
    if not isinstance(text, str) or blank(text):
        return f"{name} is empty."
    if len(text) > MAX_ANSWER:
        # (the model, the page, the trace and the store would each get a copy)
        return (
            f"{name} is {len(text):,} characters long; at most {MAX_ANSWER:,} are kept: shorten it."
        )
    if custom is not None and not isinstance(custom, bool):  # ("true" was dropped unread)
        return f"{name} has custom={quoted(custom)}; custom is true or false."
    if choice is None:
        if custom is False and text.strip() not in {c.value for c in question.choices}:
            return (
                f"{name} is marked as not custom, but {text.strip()!r} is not one of its "
                "choices; an answer is either a declared choice or a custom text."
            )
        return None if question.answer_schema is None else _unfit(question, text.strip(), name)
    if not isinstance(choice, str) or choice not in {c.value for c in question.choices}:
        return f"{choice!r} is not a choice of question {question.id!r}."
    if custom is True:
        return (
            f"{name} claims the choice {choice!r} and is marked custom; an answer is either "
            "a declared choice or a custom text, not both."
        )
    if text.strip() != choice:
        return (
            f"{name} claims the choice {choice!r} but its text is {text.strip()!r}; an answer "
            "that picks a choice must be that choice's value."
        )
    return None


_WHOLE = re.compile(r"[+-]?[0-9]+")


def typed_answer(schema: Mapping[str, Any], text: str) -> Any:
    """A custom answer as the JSON value of its field's type (``ValueError`` when it is not
    one): a number or an integer parsed, a string as it is."""
    kind = schema.get("type")
    if kind not in ("integer", "number"):
        return text
    if _WHOLE.fullmatch(text.strip()):
        return int(text)  # exactly, however long (as a float, past 2**53 it was rounded)
    number = float(text)
    if kind == "integer" and not number.is_integer():
        raise ValueError(f"{text!r} is not a whole number")
    if not math.isfinite(number):
        raise ValueError(f"{text!r} is not a finite number")
    return int(number) if kind == "integer" or (number.is_integer() and "." not in text) else number


def _unfit(question: Question, text: str, name: str) -> str | None:
    """Why a custom answer (``name``: "The answer to question ...") does not fit the question's
    ``answer_schema``, or None (a schema a validator cannot use checks only the answer's type:
    the server checks the rest)."""
    from ._schema_check import schema_problems

    schema = question.answer_schema or {}
    if "type" not in schema and isinstance(schema.get("enum"), list):  # (fixed values only)
        if text in schema["enum"]:
            return None
        labels = ", ".join(choice.label for choice in question.choices)
        return (
            f"{name} must be one of its choices ({labels}): this field takes no other "
            f"answer; got {text!r}."
        )
    try:
        value = typed_answer(schema, text)
    except ValueError:
        kind = "a whole number" if schema.get("type") == "integer" else "a number"
        return f"{name} must be {kind}; got {text!r}."
    problems = schema_problems(schema, value, limit=1)
    return f"{name} does not fit: {problems[0]}." if problems else None


def check_operator_answers(
    questions: Sequence[Question], answers: Sequence[Mapping[str, Any] | Any]
) -> list[Answer] | str:
    """Answers in question order, or why they are refused: each question exactly once, non-empty."""
    by_id = {q.id: q for q in questions}
    seen: dict[str, Answer] = {}
    for raw in answers:
        question_id, text, choice, custom = _given(raw)
        if question_id is None:
            return (
                "Each answer is an object with a questionId and an answer (and choice or "
                f"custom); got {quoted(raw)}."
            )
        if not isinstance(question_id, str) or question_id.strip() not in by_id:
            return f"Unknown question {quoted(question_id)}."
        question = by_id[question_id.strip()]
        if question.id in seen:
            return f"Question {question.id!r} is answered more than once."
        refusal = _refusal(question, text, choice, custom)
        if refusal is not None:
            return refusal
        if choice is None and custom is False:  # (not custom: the choice its text is)
            choice, custom = text.strip(), None
        seen[question.id] = Answer(
            question_id=question.id, answer=text.strip(), choice=choice, custom=custom
        )
    missing = [q.id for q in questions if q.id not in seen]
    if missing:
        return f"Every question needs an answer; missing: {', '.join(map(quoted, missing))}."
    return [seen[q.id] for q in questions]
