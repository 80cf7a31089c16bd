"""The scripted demo model: lets every tutorial notebook run offline, without a key."""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..decisions import RAN_WITH_EDITS
from ..messages import Message, ToolResultPart
from .base import CompletionModel, CompletionRequest
from .testing import ModelResponse

__all__ = ["DemoContext", "DemoModel", "Script", "auto_model"]

Step = ModelResponse | str | Callable[["DemoContext"], ModelResponse | str]


@dataclass
class DemoContext:
    """What a scripted step sees: the request, the user's text, this exchange's tool results."""

    request: CompletionRequest
    user_text: str
    tool_results: list[ToolResultPart]

    def result(self, tool_name: str) -> Any:
        """The latest result of ``tool_name`` in this exchange (decoded when it is JSON), as the
        tool gave it (without the note a call approved with changed arguments starts with)."""
        for part in reversed(self.tool_results):
            if part.tool_name == tool_name:
                content = tool_output(part)
                try:
                    return json.loads(content)
                except json.JSONDecodeError:
                    return content
        return None


#: How the result of a call approved with changed arguments begins (its first line).
_EDITED_NOTE = RAN_WITH_EDITS.partition("{")[0]


def ran_with_edits(part: ToolResultPart) -> bool:
    """Whether the call was approved with changed arguments (its result says so first)."""
    return part.content.startswith(_EDITED_NOTE)


def tool_output(part: ToolResultPart) -> str:
    """A call's result as its tool gave it: without the first line saying it was approved with
    changed arguments (the arguments are compact JSON: that line has no other line break)."""
    return part.content.partition("\n")[2] if ran_with_edits(part) else part.content


@dataclass
class Script:
    """Steps played when the user's message matches ``match`` (a regex, case-insensitive)."""

    match: str
    steps: Sequence[Step]
    _pattern: re.Pattern[str] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self._pattern = re.compile(self.match, re.IGNORECASE)

    def matches(self, text: str) -> bool:
        return bool(self._pattern.search(text))


FALLBACK = (
    "I'm the offline demo model, so I only know the scripted conversations of this notebook. "
    "Set `OPENAI_API_KEY` or `ANTHROPIC_API_KEY` to talk to a real model."
)


class DemoModel(CompletionModel):
    """Plays scripted exchanges: the first script whose pattern matches the latest user message.

    Step *n* of a script answers the *n*-th model call since that message, so a script can call
    a tool, then use its result (``ctx.result("tool")``) in the next step. Text streams word by
    word with ``delay`` seconds between words, so the demo looks live.
    """

    name = "demo-model"
    provider = "offline"

    def __init__(self, scripts: Sequence[Script] = (), *, delay: float = 0.015) -> None:
        self.scripts = list(scripts)
        self.delay = delay
        self.requests: list[CompletionRequest] = []

    def respond(self, request: CompletionRequest) -> ModelResponse:
        user_index = max(
            (i for i, m in enumerate(request.messages) if m.role == "user"), default=-1
        )
        user_text = request.messages[user_index].content if user_index >= 0 else ""
        since: list[Message] = request.messages[user_index + 1 :]
        step_index = sum(1 for m in since if m.role == "assistant")
        results = [part for m in since if m.role == "tool" for part in m.tool_results]
        context = DemoContext(request, user_text, results)
        for script in self.scripts:
            if script.matches(user_text):
                if step_index < len(script.steps):
                    step = script.steps[step_index]
                    value = step(context) if callable(step) else step
                    response = ModelResponse(text=value) if isinstance(value, str) else value
                    return _only_offered_tools(response, request)
                break
        return ModelResponse(text=FALLBACK)

    async def stream(self, request: CompletionRequest) -> AsyncIterator[Any]:
        self.requests.append(request)
        async for event in self.respond(request).events(self.delay):
            yield event


def _only_offered_tools(response: ModelResponse, request: CompletionRequest) -> ModelResponse:
    """``response`` when every tool it calls is offered by ``request``, else a plain answer.

    A real model only calls the tools it is given; the scripted one follows suit, so an agent
    built with other tools gets an honest "I can't" instead of a call to an unknown tool.
    """
    offered = {tool.name for tool in request.tools}
    missing = [call.name for call in response.tool_calls if call.name not in offered]
    if not missing:
        return response
    names = ", ".join(f"`{name}`" for name in dict.fromkeys(missing))
    return ModelResponse(
        text=(
            f"I'm the offline demo model. My script for this request uses {names}, "
            "which this agent does not have, so I can't do it here. "
            "Set `OPENAI_API_KEY` or `ANTHROPIC_API_KEY` to talk to a real model."
        )
    )


#: Set to ``1`` (or ``true``, ``yes``, ``on``) to keep :func:`auto_model` on the scripted
#: offline model where a provider key is set (the offline tour and tutorials).
OFFLINE_ENV = "ANVIA_NOTEBOOK_OFFLINE"


def auto_model(demo: CompletionModel | None = None) -> Any:
    """A real model when a provider key is set, else ``demo`` (or a bare :class:`DemoModel`).

    ``OPENAI_API_KEY`` selects ``OpenAIModel`` (``ANVIA_OPENAI_MODEL``, default ``gpt-4o-mini``);
    ``ANTHROPIC_API_KEY`` selects ``AnthropicModel`` (``ANVIA_ANTHROPIC_MODEL``, default
    ``claude-haiku-4-5``). ``ANVIA_NOTEBOOK_OFFLINE=1`` keeps ``demo`` whatever key is set.
    """
    if os.environ.get(OFFLINE_ENV, "").strip().lower() not in ("1", "true", "yes", "on"):
        for key in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
            if os.environ.get(key):
                try:
                    return _provider_model(key)
                except ImportError as error:
                    raise ImportError(
                        f"{error} ({key} is set, so a real model is used here; set "
                        f"{OFFLINE_ENV}=1 to use the scripted offline model instead)",
                        name=error.name,
                    ) from None
    return demo if demo is not None else DemoModel()


def _provider_model(key: str) -> Any:
    if key == "OPENAI_API_KEY":
        from .openai import OpenAIModel

        return OpenAIModel(os.environ.get("ANVIA_OPENAI_MODEL", "gpt-4o-mini"))
    from .anthropic import AnthropicModel

    return AnthropicModel(os.environ.get("ANVIA_ANTHROPIC_MODEL", "claude-haiku-4-5"))
