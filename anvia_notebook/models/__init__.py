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

if TYPE_CHECKING:
    from .anthropic import AnthropicModel
    from .demo import DemoContext, DemoModel, Script, auto_model
    from .openai import OpenAIModel
    from .testing import FunctionModel, ModelResponse, QueueModel, StreamingQueueModel

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


#: Imported on first use: the providers (and their SDKs) only when used, the offline models so
#: that ``import anvia_notebook`` stays quick.
_LAZY = {
    "OpenAIModel": "openai",
    "AnthropicModel": "anthropic",
    "DemoContext": "demo",
    "DemoModel": "demo",
    "Script": "demo",
    "auto_model": "demo",
    "FunctionModel": "testing",
    "ModelResponse": "testing",
    "QueueModel": "testing",
    "StreamingQueueModel": "testing",
}


def __getattr__(name: str) -> Any:
    import importlib

    if name in ("demo", "testing"):  # the modules themselves, as before they were lazy
        return importlib.import_module(f".{name}", __name__)
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
