"""Agents: a model, instructions, tools and hooks, assembled by :class:`AgentBuilder`."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ._option_checks import (
    checked_context,
    checked_handler,
    checked_hook,
    checked_human_input,
    checked_instructions,
    checked_max_tokens,
    checked_temperature,
    checked_text,
    checked_tool_choice,
    checked_turns,
)
from ._util import blank
from .approvals import ApprovalHandler
from .hooks import Hook
from .messages import Message
from .models.base import Model
from .output_types import OutputSpec, check_output_tools, output_spec
from .tools import Tool

if TYPE_CHECKING:
    from .human import HumanInput
    from .mcp import McpServerConfig
    from .request import PromptRequest
    from .store import RunStore

__all__ = ["Agent", "AgentBuilder", "DEFAULT_MAX_TURNS"]

DEFAULT_MAX_TURNS = 20


@dataclass(frozen=True)
class ContextDocument:
    text: str
    id: str | None = None


@dataclass(frozen=True)
class Agent:
    """A configured agent. Start a run with :meth:`prompt`."""

    id: str
    model: Model
    name: str | None = None
    description: str | None = None
    instruction_blocks: tuple[str, ...] = ()
    context_documents: tuple[ContextDocument, ...] = ()
    tools: dict[str, Tool] = field(default_factory=dict)
    hooks: tuple[Hook, ...] = ()
    approval_handler: ApprovalHandler | None = None
    human_input: HumanInput | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    tool_choice: Any = None
    default_max_turns: int = DEFAULT_MAX_TURNS
    #: The type every run must produce (``AgentBuilder.output_type``), or None for text.
    output: OutputSpec | None = None
    #: MCP servers whose tools the agent gets on its first run (``AgentBuilder.mcp``).
    mcp_servers: tuple[McpServerConfig, ...] = ()

    @property
    def display_name(self) -> str:
        return self.name or self.id

    @property
    def instructions(self) -> str | None:
        """The instruction blocks joined by a blank line, then the context documents."""
        blocks = list(self.instruction_blocks)
        for document in self.context_documents:
            label = f'<context id="{document.id}">' if document.id else "<context>"
            blocks.append(f"{label}\n{document.text}\n</context>")
        return "\n\n".join(blocks) if blocks else None

    def get_tool(self, name: str) -> Tool | None:
        return self.tools.get(name)

    def prompt(self, prompt: str | Message | Sequence[Message]) -> PromptRequest:
        """A request for one run. With a list, the last message is the prompt, the rest history.
        A blank prompt (a user message showing no text) is refused, as a blank steering message
        is: Anthropic's API refuses it, and an OpenAI model would answer nothing asked."""
        from .request import PromptRequest

        request = PromptRequest(self, prompt)
        message = request.prompt_message
        if message.role == "user" and not message.tool_results and blank(message.content):
            raise ValueError("agent.prompt() needs some text; this prompt is blank.")
        return request

    def as_tool(
        self,
        name: str | None = None,
        description: str | None = None,
        max_turns: int | None = None,
        stream: bool = True,
        max_depth: int = 5,
    ) -> Tool:
        """This agent as another agent's tool (Anvia's ``agent.asTool``): input
        ``{"prompt": str}``, result this agent's final output (with an output type,
        its validated value as JSON).

        ``name`` defaults to the agent's id, ``description`` to the agent's description, else
        ``"Prompt the {name} agent."``; ``max_turns`` limits the sub-agent's turns. Called from
        a run, the sub-agent's run is a run of its own (``parent_run_id``, ``parent_call_id``),
        stored with the parent's; with ``stream`` its events reach the parent's stream as
        ``agent_tool_event``; its approvals and questions surface on the top-level run. A call
        that would nest deeper than ``max_depth`` sub-agent levels below the top-level agent is
        that call's error result; so is the sub-agent's failure.
        """
        from .subagents import agent_as_tool

        return agent_as_tool(
            self,
            name=name,
            description=description,
            max_turns=max_turns,
            stream=stream,
            max_depth=max_depth,
        )

    def resume(
        self, run_id: str, store: RunStore | str | os.PathLike[str] | None = None
    ) -> PromptRequest:
        """Continue a stored run (after a kernel restart, in another process) with this agent.

        Pending approvals and questions come back pending; calls that finished are not run
        again; a call that had started is reported to the model as interrupted (or run again
        when its tool is ``idempotent``); a model call that was streaming is made again.
        Raises ``RunOwnedError`` when a live process still runs it. Returns a request: use
        ``.show()``, ``.send()`` or ``.send_sync()`` as for :meth:`prompt`.
        """
        from .request import PromptRequest

        return PromptRequest.resume(self, run_id, store)


def model_given_as_text(text: str) -> str:
    """What to say when a model is given by its name (``"gpt-4o-mini"``,
    ``"openai:gpt-4o-mini"``): the model object to make instead (package-internal: a judge's
    model is checked the same way)."""
    provider, colon, name = text.partition(":")
    name = name.strip() if colon else text.strip()
    if "anthropic" in provider.lower() or name.lower().startswith("claude"):
        suggested = f"AnthropicModel({name or 'claude-sonnet-4-6'!r})"
    else:
        suggested = f"OpenAIModel({name or 'gpt-4o-mini'!r})"
    return (
        f"The model must be a model object, not the text {text!r}. Make one and pass it, for "
        f"example {suggested} (from anvia_notebook import OpenAIModel, AnthropicModel), or, to "
        "try things without a provider, an offline model such as DemoModel or QueueModel "
        "(from anvia_notebook.models)."
    )


class AgentBuilder:
    """Chainable configuration of an :class:`Agent`."""

    def __init__(self, agent_id: str, model: Model) -> None:
        if not isinstance(agent_id, str) or not agent_id.strip():
            raise ValueError("An agent id must be a non-empty string.")
        if isinstance(model, str):
            raise TypeError(model_given_as_text(model))
        if not hasattr(model, "stream"):
            raise TypeError("`model` must have an async `stream(request)` method.")
        self._id = agent_id.strip()
        self._model = model
        self._name: str | None = None
        self._description: str | None = None
        self._instructions: list[str] = []
        self._context: list[ContextDocument] = []
        self._tools: dict[str, Tool] = {}
        self._hooks: list[Hook] = []
        self._approvals: ApprovalHandler | None = None
        self._human_input: HumanInput | None = None
        self._temperature: float | None = None
        self._max_tokens: int | None = None
        self._tool_choice: Any = None
        self._max_turns = DEFAULT_MAX_TURNS
        self._output: OutputSpec | None = None
        self._adding_many = False
        self._mcp_servers: list[McpServerConfig] = []

    def name(self, name: str | None) -> AgentBuilder:
        self._name = checked_text(name, "An agent's name")
        return self

    def description(self, description: str | None) -> AgentBuilder:
        self._description = checked_text(description, "An agent's description")
        return self

    def instructions(self, instructions: str | Sequence[str]) -> AgentBuilder:
        """Append instruction blocks (joined by a blank line)."""
        self._instructions.extend(checked_instructions(instructions))
        return self

    def context(self, text: str, id: str | None = None) -> AgentBuilder:
        checked_context(text, id)
        self._context.append(ContextDocument(text, id))
        return self

    def tool(self, tool: Tool) -> AgentBuilder:
        if not isinstance(tool, Tool):
            raise TypeError(
                f"Expected a Tool (from create_tool or @tool), got {type(tool).__name__}."
            )
        if tool.name in self._tools and self._tools[tool.name] is not tool:
            warnings.warn(
                f"A second tool named {tool.name!r} replaces the first one (tool names are "
                "unique in an agent).",
                UserWarning,
                stacklevel=3 if not self._adding_many else 4,
            )
        self._tools[tool.name] = tool
        return self

    def tools(self, tools: Sequence[Tool]) -> AgentBuilder:
        if isinstance(tools, Tool) or not isinstance(tools, Iterable):
            raise TypeError(
                f"tools() takes a list of tools, not {type(tools).__name__}; for one tool, use "
                ".tool(...)."
            )
        self._adding_many = True
        try:
            for item in tools:
                self.tool(item)
        finally:
            self._adding_many = False
        return self

    def mcp(self, servers: Sequence[McpServerConfig]) -> AgentBuilder:
        """Give the agent the tools of these MCP servers (``mcp.stdio``, ``mcp.http``,
        ``mcp.sse``). They are connected on the first run, one session per server per kernel;
        a tool name that clashes with another tool is an error then, before any model call."""
        from .mcp import McpServerConfig

        for server in servers:
            if not isinstance(server, McpServerConfig):
                raise TypeError(
                    "AgentBuilder.mcp takes servers made by mcp.stdio, mcp.http or mcp.sse, "
                    f"not {type(server).__name__}."
                )
            if server not in self._mcp_servers:
                self._mcp_servers.append(server)
        return self

    def hook(self, hook: Hook) -> AgentBuilder:
        """Add a hook; hooks run in the order added."""
        self._hooks.append(checked_hook(hook))
        return self

    def approvals(self, handler: ApprovalHandler) -> AgentBuilder:
        self._approvals = checked_handler(handler)
        return self

    def human_input(self, human_input: HumanInput) -> AgentBuilder:
        self._human_input = checked_human_input(human_input)
        return self

    def temperature(self, value: float) -> AgentBuilder:
        self._temperature = checked_temperature(value)
        return self

    def max_tokens(self, value: int) -> AgentBuilder:
        self._max_tokens = checked_max_tokens(value)
        return self

    def tool_choice(self, value: Any) -> AgentBuilder:
        self._tool_choice = checked_tool_choice(value)
        return self

    def default_max_turns(self, value: int) -> AgentBuilder:
        self._max_turns = checked_turns(value)
        return self

    def output_type(self, output_type: Any, mode: str = "tool", retries: int = 2) -> AgentBuilder:
        """Make every run produce a validated ``output_type`` (a pydantic model, or any type
        pydantic can validate, such as ``list[Model]``), as ``PromptResponse.data``.

        ``mode="tool"`` (default) gives the model a ``final_result`` tool whose input is the
        type's schema (a type that is not an object is wrapped as ``{"result": ...}``), so its
        other tools stay usable; ``mode="native"`` sends the schema as the provider's JSON-schema
        response format and validates the text. A value that fails validation goes back to the
        model with pydantic's errors up to ``retries`` times; then the approval handler or the
        person is asked to fix it (an approval of the ``final_result`` call), and with nobody
        there the run raises ``OutputValidationError``. A type pydantic cannot validate is a
        ``TypeError`` here.
        """
        self._output = output_spec(output_type, mode, retries)
        return self

    def build(self) -> Agent:
        check_output_tools(self._output, self._tools)
        return Agent(
            id=self._id,
            model=self._model,
            name=self._name,
            description=self._description,
            instruction_blocks=tuple(self._instructions),
            context_documents=tuple(self._context),
            tools=dict(self._tools),
            hooks=tuple(self._hooks),
            approval_handler=self._approvals,
            human_input=self._human_input,
            temperature=self._temperature,
            max_tokens=self._max_tokens,
            tool_choice=self._tool_choice,
            default_max_turns=self._max_turns,
            output=self._output,
            mcp_servers=tuple(self._mcp_servers),
        )
