"""The notebook layer: the transcript widget, the kernel-side runner and the Studio.

Public: ``RunHandle``, ``Studio``, ``WidgetHumanInput`` and ``AutoOperator`` (also reachable
from ``anvia_notebook``). Every module here is private:

- ``_runner.show(request)`` / ``_runner.send_sync(request)``: what ``request.show()`` and
  ``request.send_sync()`` call inside a kernel;
- ``_handle`` (``RunHandle``), ``_studio`` (``Studio``), ``_human_input`` (``WidgetHumanInput``);
- ``_protocol``: the wire protocol's models (docs/wire-protocol.md); ``_transcript``: the reducer
  from run events to entries; ``_batcher``: numbered batches; ``_snapshot``: the static copy;
  ``_session``: one widget's kernel side; ``_widget``: the anywidget; ``_capture``: a tool's
  printed output; ``_inspect``: the Inspect view's data; ``_evals_view``: the evals report.

Modules are imported on first use (anywidget only when a widget is made).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._handle import RunHandle
    from ._human_input import AutoOperator, WidgetHumanInput
    from ._studio import Studio

__all__ = ["AutoOperator", "RunHandle", "Studio", "WidgetHumanInput"]

_LAZY = {
    "RunHandle": "_handle",
    "Studio": "_studio",
    "WidgetHumanInput": "_human_input",
    "AutoOperator": "_human_input",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
