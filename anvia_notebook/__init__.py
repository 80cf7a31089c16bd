"""anvia_notebook: build and debug LLM agents with a human in the loop, inside a notebook.

The runtime (tools, hooks, approvals, questions, the run loop, models) never imports Jupyter;
the notebook layer (``anvia_notebook.notebook``) is imported only when a run is shown in a
kernel. Real providers (``OpenAIModel``, ``AnthropicModel``) are imported only when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__
from .agent import Agent, AgentBuilder
from .approvals import (
    ApprovalContext,
    ApprovalDecision,
    RunInfo,
    ToolApproval,
    ToolApprovalRequest,
)
from .completions import ParsedCompletion, create_parsed_completion
from .errors import (
    AnviaError,
    DecisionRefusedError,
    ExtractionError,
    MaxTurnsError,
    OutputValidationError,
    PromptCancelledError,
    RequestAlreadyUsedError,
    RunEndedError,
    RunNotFoundError,
    RunOwnedError,
    RunStoreError,
    SubAgentError,
    ToolApprovalRequiredError,
    ToolArgumentsError,
    ToolNotFoundError,
)
from .events import AgentToolEvent, RunEvent
from .extractor import ExtractionResponse, Extractor, ExtractorBuilder
from .hooks import Hook, RunControl, ToolCallControl, compose_hooks, create_hook
from .human import (
    CallbackHumanInput,
    ConsoleHumanInput,
    HumanInput,
    HumanInputTimeout,
    HumanInputUnavailable,
    StoreHumanInput,
)
from .instrumentation import instrument
from .messages import Message, MessageToolCall, ToolResultPart, Usage
from .question_types import Answer, Choice, Question
from .questions import QuestionRequest, ask_question, create_question_tool
from .records import ApprovalRecord, Interaction, QuestionRecord
from .request import PromptRequest
from .run import AgentRun
from .run_state import PromptResponse, RunState
from .tools import Tool, ToolContext, create_tool, tool
from .trace import ToolCallTrace, Trace, TurnTrace

if TYPE_CHECKING:
    from .models.anthropic import AnthropicModel
    from .models.openai import OpenAIModel
    from .notebook._handle import RunHandle
    from .notebook._studio import Studio
    from .store import RunList, RunStore, RunSummary, get_store, runs, set_store

__all__ = [
    "__version__",
    # agents and runs
    "Agent",
    "AgentBuilder",
    "AgentRun",
    "PromptRequest",
    "PromptResponse",
    "RunState",
    "RunInfo",
    # messages
    "Message",
    "MessageToolCall",
    "ToolResultPart",
    "Usage",
    # tools
    "Tool",
    "ToolContext",
    "create_tool",
    "tool",
    # approvals
    "ToolApproval",
    "ApprovalContext",
    "ApprovalDecision",
    "ToolApprovalRequest",
    "ApprovalRecord",
    "Interaction",
    # hooks
    "Hook",
    "RunControl",
    "ToolCallControl",
    "create_hook",
    "compose_hooks",
    # questions
    "ask_question",
    "create_question_tool",
    "Question",
    "Choice",
    "Answer",
    "QuestionRequest",
    "QuestionRecord",
    # human input
    "HumanInput",
    "CallbackHumanInput",
    "ConsoleHumanInput",
    "HumanInputTimeout",
    "HumanInputUnavailable",
    "StoreHumanInput",
    # runs that outlive the kernel
    "RunStore",
    "RunSummary",
    "RunList",
    "runs",
    "set_store",
    "get_store",
    # traces
    "instrument",
    "Trace",
    "TurnTrace",
    "ToolCallTrace",
    # events
    "RunEvent",
    "AgentToolEvent",
    # errors
    "AnviaError",
    "MaxTurnsError",
    "PromptCancelledError",
    "RequestAlreadyUsedError",
    "ToolApprovalRequiredError",
    "DecisionRefusedError",
    "RunStoreError",
    "RunNotFoundError",
    "RunOwnedError",
    "SubAgentError",
    "RunEndedError",
    "ToolArgumentsError",
    "ToolNotFoundError",
    "OutputValidationError",
    "ExtractionError",
    "ExtractorBuilder",
    "Extractor",
    "ExtractionResponse",
    "create_parsed_completion",
    "ParsedCompletion",
    # lazily imported
    "OpenAIModel",
    "AnthropicModel",
    "RunHandle",
    "Studio",
    # evals (a module: ``from anvia_notebook import evals``)
    "evals",
    # MCP servers' tools (a module: ``from anvia_notebook import mcp``)
    "mcp",
]

#: Imported on first use, so that ``import anvia_notebook`` stays quick.
_LAZY = {
    "RunStore": ("store", "RunStore"),
    "RunSummary": ("store", "RunSummary"),
    "RunList": ("store", "RunList"),
    "runs": ("store", "runs"),
    "set_store": ("store", "set_store"),
    "get_store": ("store", "get_store"),
    "OpenAIModel": ("models.openai", "OpenAIModel"),
    "AnthropicModel": ("models.anthropic", "AnthropicModel"),
    "RunHandle": ("notebook._handle", "RunHandle"),
    "Studio": ("notebook._studio", "Studio"),
}


def __getattr__(name: str) -> Any:
    if name in ("evals", "store", "mcp"):  # subpackages imported on first use
        import importlib

        return importlib.import_module(f".{name}", __name__)
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(f".{module}", __name__), attr)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
