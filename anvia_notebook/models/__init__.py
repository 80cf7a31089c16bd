"""Models: the contract, offline models, and real providers (imported only when used)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import (
    CompletionEvent,
    CompletionModel,
    CompletionRequest,
    CompletionResponse,
    Finish,
    Model,
    ModelError,
    ProviderData,
    ReasoningDelta,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolDefinition,
    UsageUpdate,
)
from .demo import DemoContext, DemoModel, Script, auto_model
from .testing import FunctionModel, ModelResponse, QueueModel, StreamingQueueModel

if TYPE_CHECKING:
    from .anthropic import AnthropicModel
    from .openai import OpenAIModel

__all__ = [
    "AnthropicModel",
    "CompletionEvent",
    "CompletionModel",
    "CompletionRequest",
    "CompletionResponse",
    "DemoContext",
    "DemoModel",
    "Finish",
    "FunctionModel",
    "Model",
    "ModelError",
    "ModelResponse",
    "OpenAIModel",
    "ProviderData",
    "QueueModel",
    "ReasoningDelta",
    "Script",
    "StreamingQueueModel",
    "TextDelta",
    "ToolCall",
    "ToolCallDelta",
    "ToolDefinition",
    "UsageUpdate",
    "auto_model",
]


def __getattr__(name: str) -> Any:
    if name == "OpenAIModel":
        from .openai import OpenAIModel

        return OpenAIModel
    if name == "AnthropicModel":
        from .anthropic import AnthropicModel

        return AnthropicModel
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
