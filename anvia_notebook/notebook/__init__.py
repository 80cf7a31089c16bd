"""The notebook layer: the transcript widget, the kernel-side runner and the Studio.

- ``runner.show(request)`` / ``runner.send_sync(request)``: what ``request.show()`` and
  ``request.send_sync()`` call inside a kernel;
- ``RunHandle`` (``handle``), ``Studio`` (``studio``), ``WidgetHumanInput`` (``human_input``);
- ``protocol``: the wire protocol's models (docs/wire-protocol.md); ``transcript``: the reducer
  from run events to entries; ``batcher``: numbered batches; ``snapshot``: the static copy.

Modules are imported on first use (anywidget only when a widget is made).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .handle import RunHandle
    from .human_input import AutoOperator, WidgetHumanInput
    from .studio import Studio

__all__ = ["AutoOperator", "RunHandle", "Studio", "WidgetHumanInput"]

_LAZY = {
    "RunHandle": "handle",
    "Studio": "studio",
    "WidgetHumanInput": "human_input",
    "AutoOperator": "human_input",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
