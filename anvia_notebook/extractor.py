"""Structured extraction, as Anvia's ``ExtractorBuilder``: text in, validated data out.

``ExtractorBuilder(model, Model).retries(n).build().extract(text)`` asks the model (one
completion per attempt, not an agent run) to call a ``submit`` tool whose input is ``Model``'s
JSON Schema, with ``tool_choice="required"``; the arguments of the last ``submit`` call are
validated with pydantic. An attempt without a ``submit`` call, or whose data fails validation
(or whose model call fails), is tried again, up to ``retries`` more times; then
:class:`~anvia_notebook.errors.ExtractionError` is raised, caused by the last failure.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ._script_loop import run_in_script
from ._util import check_valid_text
from .agent import Agent, AgentBuilder
from .errors import ExtractionError
from .messages import Message, Usage
from .models.base import CompletionRequest, CompletionResponse, Model, collect_completion
from .output_types import OutputSpec, output_spec
from .tools import Tool

__all__ = [
    "DEFAULT_EXTRACTOR_INSTRUCTIONS",
    "ExtractionError",
    "ExtractionResponse",
    "Extractor",
    "ExtractorBuilder",
]

T = TypeVar("T")

#: The name of the tool the model calls with the extracted data.
SUBMIT_TOOL_NAME = "submit"
SUBMIT_TOOL_DESCRIPTION = "Submit the structured data extracted from the provided text."
#: The instructions every extractor starts with (``.instructions(...)`` adds to them).
DEFAULT_EXTRACTOR_INSTRUCTIONS = (
    "You are an AI assistant whose purpose is to extract structured data from the provided text.\n"
    "You have access to a `submit` function that defines the structure of the data to extract.\n"
    "Always call the `submit` function with the structured data. Use default or null values when "
    "information is missing."
)


@dataclass(frozen=True)
class ExtractionResponse(Generic[T]):
    """The extracted data, the usage of every attempt, and the conversation of the last one."""

    data: T
    usage: Usage
    messages: list[Message]


class Extractor(Generic[T]):
    """Extracts a validated value of one type from text (see :class:`ExtractorBuilder`)."""

    def __init__(self, agent: Agent, spec: OutputSpec, retries: int) -> None:
        self._agent = agent
        self._spec = spec
        self._retries = retries
        #: What the model is told of ``submit``: the type's own schema.
        self._submit = spec.tool_definition().model_copy(
            update={"name": SUBMIT_TOOL_NAME, "description": SUBMIT_TOOL_DESCRIPTION}
        )

    async def extract(self, text: str | Message) -> T:
        """The data in ``text``; raises :class:`ExtractionError` when none could be extracted."""
        return (await self.extract_with_usage(text)).data

    async def extract_with_usage(self, text: str | Message) -> ExtractionResponse[T]:
        return await self._run(text, None)

    async def extract_with_history(self, text: str | Message, history: Sequence[Message]) -> T:
        """As :meth:`extract`, with earlier messages before ``text``."""
        if isinstance(history, (str, bytes, Message)) or not isinstance(history, Sequence):
            raise TypeError(
                f"The history must be a list of Messages, not {type(history).__name__}."
            )
        for number, item in enumerate(history, start=1):
            if not isinstance(item, Message):
                raise TypeError(
                    f"The history must be a list of Messages; item {number} is "
                    f"{type(item).__name__}."
                )
        return (await self._run(text, list(history))).data

    def extract_sync(self, text: str | Message) -> T:
        """:meth:`extract` from code that is not async (a script, a thread)."""
        return run_in_script(self.extract(text))

    def get_inner(self) -> Agent:
        """The agent holding the extractor's model, instructions and ``submit`` tool."""
        return self._agent

    async def _run(
        self, text: str | Message, history: list[Message] | None
    ) -> ExtractionResponse[T]:
        agent = self._agent
        prompt = _prompt(text)
        usage = Usage()
        last_error: BaseException | None = None
        for _ in range(self._retries + 1):
            try:
                request = CompletionRequest(
                    instructions=agent.instructions,
                    messages=[*(history or []), prompt],
                    tools=[self._submit],
                    temperature=agent.temperature,
                    max_tokens=agent.max_tokens,
                    tool_choice=agent.tool_choice,
                )
                response = await collect_completion(agent.model.stream(request))
                usage = usage + response.usage
                data = self._submitted(response)
                return ExtractionResponse(
                    data=data,
                    usage=usage,
                    messages=[*(history or []), prompt, response.to_message()],
                )
            except Exception as error:  # tried again, as in Anvia
                last_error = error
        raise ExtractionError("No data extracted", last_error) from last_error

    def _submitted(self, response: CompletionResponse) -> T:
        submitted = [call for call in response.tool_calls if call.name == SUBMIT_TOOL_NAME]
        if not submitted:
            raise ExtractionError("The model did not call the submit tool")
        value: T = self._spec.validate_arguments(submitted[-1].arguments)
        return value


def _prompt(text: Any) -> Message:
    """What to extract from, as the user message the model gets: a text or a Message; anything
    else is a ``TypeError`` at once (not an :class:`ExtractionError` after every retry)."""
    if isinstance(text, Message):
        return text
    if not isinstance(text, str):
        raise TypeError(f"extract() takes a str or a Message, not {type(text).__name__}.")
    check_valid_text(text, "The text to extract from")
    return Message.user(text)


class ExtractorBuilder(Generic[T]):
    """Chainable configuration of an :class:`Extractor` of ``output_type`` (a pydantic model, or
    any type pydantic can validate; one that is not a JSON object is submitted as
    ``{"result": ...}``)."""

    def __init__(self, model: Model, output_type: type[T] | Any) -> None:
        self._spec = output_spec(output_type, "tool", 0)
        submit = Tool(
            name=SUBMIT_TOOL_NAME,
            description=SUBMIT_TOOL_DESCRIPTION,
            input=self._spec.input_model,
            execute=lambda args, ctx: args,
        )
        self._builder = (
            AgentBuilder("extractor", model)
            .instructions(DEFAULT_EXTRACTOR_INSTRUCTIONS)
            .tool(submit)
            .tool_choice("required")
        )
        self._retries = 0

    def instructions(self, instructions: str) -> ExtractorBuilder[T]:
        """Add instructions after the default ones."""
        self._builder.instructions(instructions)
        return self

    def context(self, text: str, id: str | None = None) -> ExtractorBuilder[T]:
        self._builder.context(text, id)
        return self

    def temperature(self, temperature: float) -> ExtractorBuilder[T]:
        self._builder.temperature(temperature)
        return self

    def max_tokens(self, max_tokens: int) -> ExtractorBuilder[T]:
        self._builder.max_tokens(max_tokens)
        return self

    def tool_choice(self, tool_choice: Any) -> ExtractorBuilder[T]:
        self._builder.tool_choice(tool_choice)
        return self

    def retries(self, retries: int) -> ExtractorBuilder[T]:
        """How many more attempts after a failed one (a negative number is 0)."""
        self._retries = max(0, int(retries))
        return self

    def build(self) -> Extractor[T]:
        return Extractor(self._builder.build(), self._spec, self._retries)
