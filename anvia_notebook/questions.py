"""The ``ask_question`` tool: ask the operator structured questions in the middle of a run."""

from __future__ import annotations

from dataclasses import dataclass

from .question_types import Answer, Question, QuestionInput
from .run_info import RunInfo
from .tools import Tool, ToolContext, warn_unsendable_name

__all__ = [
    "NO_HUMAN_ANSWER",
    "QuestionRequest",
    "QuestionTool",
    "ask_question",
    "create_question_tool",
]

NO_HUMAN_ANSWER = "No human answer was provided by this runtime."

_DEFAULT_DESCRIPTION = (
    "Ask the human operator one or more questions and wait for the answers. Give each question "
    "a stable id, the question text and at least one choice ({label, value}); the operator may "
    "pick a choice or type a custom answer. Ask all missing questions in one call."
)


@dataclass
class QuestionRequest:
    """Questions to put to a person; ``question_id`` matches the ``QuestionRecord`` id."""

    question_id: str
    tool_name: str
    tool_call_id: str | None
    internal_call_id: str
    questions: list[Question]
    run: RunInfo


class QuestionTool(Tool):
    """A tool whose calls a human input intercepts; its own ``execute`` is the fallback."""


def create_question_tool(
    name: str = "ask_question", description: str = _DEFAULT_DESCRIPTION
) -> QuestionTool:
    """Make an ``ask_question``-style tool under another name."""

    def execute(args: QuestionInput, ctx: ToolContext) -> str:
        import json

        answers = [Answer(question_id=q.id, answer=NO_HUMAN_ANSWER) for q in args.questions]
        return json.dumps(
            {"answers": [answer.to_wire() for answer in answers]}, separators=(",", ":")
        )  # (compact, as a person's answers are told)

    warn_unsendable_name(name)
    return QuestionTool(name=name, description=description, input=QuestionInput, execute=execute)


ask_question = create_question_tool()
