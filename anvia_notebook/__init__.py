"""anvia_notebook: build and debug LLM agents with a human in the loop, inside a notebook.

The runtime (tools, hooks, approvals, questions, the run loop, models) never imports Jupyter;
the notebook layer (``anvia_notebook.notebook``) is imported only when a run is shown in a
kernel. Every name below is imported on first use (``from anvia_notebook import Agent`` loads
the runtime, ``RunStore`` only the run store), and real providers (``OpenAIModel``,
``AnthropicModel``) only when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._version import __version__

if TYPE_CHECKING:
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
        ModelError,
        OutputValidationError,
        PromptCancelledError,
        RequestAlreadyUsedError,
        RunEndedError,
        RunExitedError,
        RunNotFoundError,
        RunOwnedError,
        RunStoreError,
        RunTakenOverError,
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
    from .models.anthropic import AnthropicModel
    from .models.openai import OpenAIModel
    from .notebook._handle import RunHandle
    from .notebook._studio import Studio
    from .question_types import Answer, Choice, Question
    from .questions import QuestionRequest, ask_question, create_question_tool
    from .records import ApprovalRecord, Interaction, QuestionRecord
    from .request import PromptRequest
    from .run import AgentRun
    from .run_state import PromptResponse, RunState
    from .store import RunList, RunStore, RunSummary, get_store, runs, set_store
    from .tools import Tool, ToolContext, create_tool, tool
    from .trace import ToolCallTrace, Trace, TurnTrace

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
    "RunTakenOverError",
    "ModelError",
    "SubAgentError",
    "RunEndedError",
    "RunExitedError",
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

#: Where each export lives: every one is imported on first use, so that ``import anvia_notebook``
#: (and the command line, ``python -m anvia_notebook``) loads only what is used.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "agent": ("Agent", "AgentBuilder"),
    "approvals": (
        "ApprovalContext",
        "ApprovalDecision",
        "RunInfo",
        "ToolApproval",
        "ToolApprovalRequest",
    ),
    "completions": ("ParsedCompletion", "create_parsed_completion"),
    "errors": (
        "AnviaError",
        "DecisionRefusedError",
        "ExtractionError",
        "MaxTurnsError",
        "ModelError",
        "OutputValidationError",
        "PromptCancelledError",
        "RequestAlreadyUsedError",
        "RunEndedError",
        "RunExitedError",
        "RunNotFoundError",
        "RunOwnedError",
        "RunStoreError",
        "RunTakenOverError",
        "SubAgentError",
        "ToolApprovalRequiredError",
        "ToolArgumentsError",
        "ToolNotFoundError",
    ),
    "events": ("AgentToolEvent", "RunEvent"),
    "extractor": ("ExtractionResponse", "Extractor", "ExtractorBuilder"),
    "hooks": ("Hook", "RunControl", "ToolCallControl", "compose_hooks", "create_hook"),
    "human": (
        "CallbackHumanInput",
        "ConsoleHumanInput",
        "HumanInput",
        "HumanInputTimeout",
        "HumanInputUnavailable",
        "StoreHumanInput",
    ),
    "instrumentation": ("instrument",),
    "messages": ("Message", "MessageToolCall", "ToolResultPart", "Usage"),
    "question_types": ("Answer", "Choice", "Question"),
    "questions": ("QuestionRequest", "ask_question", "create_question_tool"),
    "records": ("ApprovalRecord", "Interaction", "QuestionRecord"),
    "request": ("PromptRequest",),
    "run": ("AgentRun",),
    "run_state": ("PromptResponse", "RunState"),
    "tools": ("Tool", "ToolContext", "create_tool", "tool"),
    "trace": ("ToolCallTrace", "Trace", "TurnTrace"),
    "models.anthropic": ("AnthropicModel",),
    "models.openai": ("OpenAIModel",),
    "notebook._handle": ("RunHandle",),
    "notebook._studio": ("Studio",),
    "store": ("RunList", "RunStore", "RunSummary", "get_store", "runs", "set_store"),
}
_LAZY = {name: module for module, names in _EXPORTS.items() for name in names}


#: Subpackages reached as attributes (``from anvia_notebook import evals``).
_SUBPACKAGES = ("evals", "store", "mcp")


def __getattr__(name: str) -> Any:
    import importlib

    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(f".{module}", __name__), name)
        globals()[name] = value  # found directly from now on
        return value
    if name in _SUBPACKAGES or (not name.startswith("__") and _is_submodule(name)):
        # A module as an attribute (``anvia_notebook.models``), as when the package imported
        # its modules at once.
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _is_submodule(name: str) -> bool:
    from importlib.util import find_spec

    try:
        return find_spec(f"{__name__}.{name}") is not None
    except (ImportError, ValueError):
        return False


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
